// Package balancer is a client-side balancer for Go callers of inference
// services registered by nacos-ai-bridge. It reads the instance metadata the
// bridge publishes and picks endpoints that are ready, healthy, capable and
// least loaded.
//
// Shape (after grpc-go's balancer/picker split): a Balancer receives the full
// instance list of one service on one goroutine (a Nacos subscription) and
// rebuilds an immutable snapshot published through an atomic pointer. Pick
// reads the snapshot, never blocks, never does I/O and may be called from any
// goroutine; the Done func it returns reports the outcome.
//
// Per-endpoint state that must survive snapshot rebuilds (in-flight count,
// latency estimates, circuit breaker, slow-start clock) lives in stats keyed
// by instance address, shared by consecutive snapshots. Hot-path updates are
// atomics only.
//
// Filters (pure functions, applied in order): Nacos enabled/healthy;
// lifecycle ACTIVE (absent key: Nacos flags alone); warm.status ready;
// inference and GPU health; capability (task, model); request constraints;
// breaker not open. Locale and region are preferences. With nothing left
// Pick returns ErrNoEndpoint with the reason; FailOpen relaxes inference
// health and staleness only, never DRAINING or STOPPED.
//
// The default policy ("ai") is power-of-two-choices over a cost combining the
// client's exact in-flight count, the published queue depth and in-flight
// against max.concurrent, GPU utilisation, free VRAM, KV-cache usage and
// latency, divided by weight, with slow start. Signals older than StaleAfter
// are neutral. Other policies are there for comparison and for users who
// want them: round-robin, weighted-random, least-request, wlc, gpu-score.
package balancer
