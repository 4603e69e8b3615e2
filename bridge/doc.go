// Package bridge makes a Nacos instance describe an inference service: what
// it is (GPU, models, limits) and how it is doing (lifecycle, warm status,
// inference health, latency, load), written into instance metadata only as
// often as a push to every subscriber is worth.
//
// Bridge is the whole of it for one instance: New, then Run registers the
// instance, runs the health cycle (liveness, readiness, warm-up, the
// inference probe), hot-applies the inference config and, when its context
// ends or Shutdown is called, drains and deregisters. State, Events and
// Probes are the snapshots the admin endpoint renders; Middleware, Begin and
// End count the work in flight for the metadata and the drain.
//
// Desired builds the metadata for one instance from static facts, live state
// and a GPU sample; Machine is the lifecycle state machine
// (REGISTERED -> ACTIVE -> DRAINING -> STOPPED, cold -> warming -> ready).
// Both are pure and owned by the goroutine that runs the health cycle.
//
// Sub-packages: gpu samples GPUs behind a small interface (NVML or static
// facts); publish quantises and coalesces metadata writes; backend reads
// what each inference engine exposes; proxy fronts a backend for the
// sidecar; admin serves the admin endpoints; metrics is the Prometheus text
// format they use.
package bridge
