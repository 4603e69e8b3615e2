// Package shutdown drains an inference service before it leaves the registry.
//
// Callers cache the instance list, so an instance that simply exits keeps
// receiving requests until every cache has caught up, and the requests it was
// running (token streams included) are cut off. The sequence here avoids
// both:
//
//  1. publish DRAINING (and enabled=false) at once — Plan.MarkDraining;
//  2. keep serving, in-flight and late-arriving requests alike, for a
//     propagation delay, so that callers' caches see the change;
//  3. refuse new work (503 with Retry-After) — Tracker.Refuse;
//  4. wait for in-flight requests to end, bounded by a drain timeout;
//  5. deregister (STOPPED) — Plan.Deregister — and return a Report.
//
// The package owns only the mechanics. The bridge owns the lifecycle state and
// Nacos, and hands in the steps that touch it as funcs, which keeps this
// package free of I/O and testable with a fake Clock.
//
// Notify wires the sequence to SIGTERM/SIGINT: the first signal starts the
// graceful path, a second one cancels it and forces an exit.
//
// # Concurrency
//
// Tracker is safe for use by any number of goroutines. Begin and End are
// lock-free and allocation-free (an atomic add and two loads for Begin, an
// add and a load for End), so they can sit on every request's path; Refuse and Wait may be called from
// any goroutine, any number of times. A Tracker must not be copied after
// first use.
//
// Plan is a value; Run may be called from any goroutine and blocks until the
// sequence is done. Every goroutine Run starts is joined before it returns.
// Notify starts one goroutine (and one more for the graceful func); the stop
// func it returns ends and joins both, and is idempotent.
package shutdown
