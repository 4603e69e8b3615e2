// Package warmup warms an inference backend up before it takes traffic.
//
// A freshly started inference server answers its readiness probe long before
// it is fast: kernels compile, caches fill and memory pools grow on the first
// requests. So after readiness passes and before the instance turns ACTIVE,
// the bridge runs a number of rounds (one inference on a sample input each)
// and only lets traffic in when enough of them succeeded and, if a target is
// set, the model has become fast enough. The latencies measured on the way are
// the instance's baseline p50/p95.
//
// Run performs one warm-up: Config.Rounds rounds, one after another, each
// bounded by Config.RoundTimeout and all by Config.Total; it stops early when
// success has become impossible. Until repeats Run with exponential back-off
// until it succeeds or its context ends. Neither touches Nacos: the bridge
// owns the warm status (it publishes `warming` while they run) and publishes
// Result.Reason when a warm-up fails.
//
// Time is injected through Clock (RealClock in production), so tests run the
// whole schedule without sleeping.
//
// Concurrency: Run and Until start no goroutines. They call Func, Clock.Sleep
// and the onAttempt hook on the caller's goroutine, one call at a time, and
// return when the last call has returned, so a Func that honours its context
// is never left running. A Func must therefore return promptly once its
// context is done; a round's context carries the round's deadline. Several
// Runs may proceed at once on different goroutines if their Funcs allow it;
// RealClock is safe for concurrent use.
package warmup
