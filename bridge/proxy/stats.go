package proxy

import (
	"slices"
	"sync/atomic"
	"time"
)

// LatencyWindow is how many of the most recent requests the latency
// percentiles in Snapshot are taken over. 1024 is enough for a stable p95
// (about 51 samples above it) and small enough that Stats can copy and sort
// the window on every metadata cycle without showing up in a profile.
const LatencyWindow = 1024

// Snapshot is a point-in-time view of a Proxy's counters. Counters are
// cumulative since New; read two snapshots and subtract for rates. Fields
// are read one by one without a lock, so a snapshot taken under load may be
// off by the requests that completed while it was being read.
type Snapshot struct {
	// InFlight is the number of requests admitted and not yet finished
	// (response body fully written, streams included).
	InFlight int64
	// Requests counts requests admitted and forwarded (or attempted).
	Requests uint64
	// Refused counts requests answered 503 by the Tracker while draining.
	Refused uint64
	// Failures counts requests the backend did not answer: connection
	// refused or reset, or a response cut off mid-body. Each got a 502 when
	// no response had started.
	Failures uint64
	// Canceled counts requests the client abandoned: gone before its body
	// was read or before the response was complete. They are not backend
	// failures.
	Canceled uint64
	// Rewritten counts request bodies changed by the inference config
	// (fields filled or clamped).
	Rewritten uint64
	// Clamped counts rewritten bodies in which a token limit was clamped.
	Clamped uint64
	// Malformed counts bodies on a rewrite path that were not a JSON object;
	// they were passed to the backend unchanged so it gives its own error.
	Malformed uint64
	// Oversized counts bodies over Options.MaxBodyBytes, passed through
	// unread.
	Oversized uint64
	// LatencyP50 and LatencyP95 are taken over the last LatencyWindow
	// finished requests (LatencySamples of them, fewer right after start),
	// from admission to the last byte of the response. Streams count with
	// their full duration, so a mix of streaming and short requests widens
	// the spread: that is the load the instance is really carrying.
	LatencyP50, LatencyP95 time.Duration
	// LatencySamples is the number of samples behind the percentiles.
	LatencySamples int
}

// latencyRing keeps the last LatencyWindow latencies. Writers claim a slot
// with one atomic add and store into it; there is no lock. A reader may see
// a slot being overwritten by a newer sample, which only shifts the window
// by one request, so it is harmless for percentiles.
type latencyRing struct {
	next  atomic.Uint64
	slots [LatencyWindow]atomic.Int64 // nanoseconds
}

func (r *latencyRing) record(d time.Duration) {
	i := r.next.Add(1) - 1
	r.slots[i%LatencyWindow].Store(int64(d))
}

// percentiles returns p50, p95 (nearest rank) and the sample count.
func (r *latencyRing) percentiles() (p50, p95 time.Duration, n int) {
	n = int(min(r.next.Load(), LatencyWindow))
	if n == 0 {
		return 0, 0, 0
	}
	buf := make([]int64, n)
	for i := range buf {
		buf[i] = r.slots[i].Load()
	}
	slices.Sort(buf)
	rank := func(q float64) time.Duration {
		k := int(q*float64(n)+0.999999) - 1 // ceil(q*n) - 1
		return time.Duration(buf[max(0, min(k, n-1))])
	}
	return rank(0.50), rank(0.95), n
}
