// Package sim is a deterministic discrete-event simulation of a fleet of
// inference instances behind package balancer, used to compare the
// balancing policies on one workload against an oracle.
//
// Everything runs on one goroutine against a simulated clock: every
// balancer gets Options.Now reading that clock and a seeded Options.Rand,
// so one seed always gives the same table.
//
// The model, and why:
//
//   - Instances. Each is a server with Slots concurrent execution slots (an
//     inference engine's batch, max.concurrent) and a FIFO queue in front
//     of them. A request's service time does not depend on how full the
//     batch is: that keeps the capacity of an instance a constant
//     (Slots / mean service time), so "80% of capacity" means something,
//     and the policies are compared on queueing alone. Speeds are factors
//     on service time: an instance of speed 0.3 takes 1/0.3 as long.
//   - Service times are lognormal with the configured mean and sigma
//     (mu = ln(mean) - sigma^2/2). A request's size (its normal deviate) is
//     drawn with its arrival, so every policy sees the same requests; the
//     service time is fixed when it starts, from the size and the speed,
//     slowdown and warm-up factors of that moment.
//   - Clients. Each has its own Balancer, so it knows only its own
//     in-flight counts and latencies, and its own Poisson arrival stream.
//     Requests travel to instances and back without network delay.
//   - Publishing. Each instance runs the bridge's publisher
//     (publish.Publisher, so publish.Quantize and publish.Decide) with a
//     fake Nacos writer: every 5 s it offers queue depth, in-flight, p50/p95
//     of the server-side latency (queue wait + service) of the last 30 s,
//     GPU utilisation (share of time with a request running, smoothed like
//     bridge.Desired), KV-cache usage (busy slots) and a constant free VRAM
//     (engines preallocate their KV cache); lifecycle and warm changes are
//     offered at once. A write replaces the instance in the registry.
//   - Pushes. A registry change schedules one push per client after a
//     uniform delay (0.5-1 s); changes before the push are coalesced into
//     it, as the Nacos server merges push tasks, and the push carries the
//     full list at delivery time. Instances are always Enabled and Healthy
//     in Nacos, so only the metadata keeps clients off draining or cold
//     instances: the stricter test of the balancer's filters.
//   - Events. One instance restarts: it publishes DRAINING, keeps serving
//     what reaches it until it is empty (and at least DrainGrace, longer
//     than any push delay, has passed), disappears from the registry, comes
//     back REGISTERED+cold, then warming, then ACTIVE+ready; requests served
//     before it is ready take WarmFactor times longer. Another instance's
//     service times are multiplied by a factor for a while.
//   - The oracle is a central dispatcher that sees every instance's true
//     state: each request goes to the ready instance where it would finish
//     first in expectation, computed from the exact remaining service of
//     the running requests and the exact service of the queued ones (join
//     the shortest queue on true remaining work, per slot), plus the mean
//     service time of the new request there. It is a lower bound in
//     spirit, not a proven optimum.
//
// Latency is measured by the client, from pick to response. Arrivals stop
// at Config.Duration; the simulation then runs on until every request has
// completed, so unstable policies show their full backlog in the tail.
package sim
