// Package bridge makes a Nacos instance describe an inference service: what
// it is (GPU, models, limits) and how it is doing (lifecycle, warm status,
// inference health, latency, load), written into instance metadata only as
// often as a push to every subscriber is worth.
//
// Sub-packages: gpu samples GPUs behind a small interface (NVML or static
// facts); publish quantises and coalesces metadata writes.
//
// Desired builds the metadata for one instance from static facts, live state
// and a GPU sample; it is owned by the goroutine that runs the health cycle.
package bridge
