// Package gpu samples the GPUs of an inference instance behind a small
// interface, Sampler, so the bridge never depends on NVML directly.
//
// NVML (through go-nvml, which needs cgo and loads libnvidia-ml at run time)
// is one implementation; Static serves GPU facts from configuration for hosts
// without a driver or CPU-only backends; None reports no GPU at all. A failed
// nvml.Init is a clear, logged, harmless state: no NVML function is called
// after it, because calling NVML after a failed Init kills the process.
//
// Concurrency: Sample may be called from any goroutine. An NVML sampler owns
// one goroutine that waits for XID and ECC events; Close stops it and waits.
package gpu
