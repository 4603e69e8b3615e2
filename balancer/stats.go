package balancer

import (
	"math"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds (ms) of the latency histogram: ~20%
// apart from 1 ms to ~10 min, enough resolution for p50/p95/p99.
var latencyBuckets = func() []float64 {
	var b []float64
	for v := 1.0; v < 600000; v *= 1.2 {
		b = append(b, v)
	}
	return b
}()

const (
	windowSlots = 6                // slots in the sliding window
	slotWidth   = 10 * time.Second // 6 x 10 s = the 60 s window
)

// slot is one time slice of the sliding window; every field is atomic.
type slot struct {
	epoch    atomic.Int64 // which slotWidth-long interval the slot holds
	count    atomic.Int64
	failures atomic.Int64
	buckets  []atomic.Int64
}

// window is a lock-free sliding window of request outcomes and latencies.
type window struct{ slots [windowSlots]slot }

func newWindow() *window {
	w := &window{}
	for i := range w.slots {
		w.slots[i].buckets = make([]atomic.Int64, len(latencyBuckets)+1)
	}
	return w
}

func (w *window) slotFor(now time.Time) *slot {
	e := now.UnixNano() / int64(slotWidth)
	s := &w.slots[e%windowSlots]
	if old := s.epoch.Load(); old != e && s.epoch.CompareAndSwap(old, e) {
		// First writer of a new interval clears it. A concurrent writer may
		// land a count in the old interval's data; an estimate tolerates it.
		s.count.Store(0)
		s.failures.Store(0)
		for i := range s.buckets {
			s.buckets[i].Store(0)
		}
	}
	return s
}

func (w *window) record(now time.Time, lat time.Duration, failed bool) {
	s := w.slotFor(now)
	s.count.Add(1)
	if failed {
		s.failures.Add(1)
		return // a failure's latency says little about service time
	}
	ms := float64(lat) / float64(time.Millisecond)
	i := bucketIndex(ms)
	s.buckets[i].Add(1)
}

func bucketIndex(ms float64) int {
	lo, hi := 0, len(latencyBuckets)
	for lo < hi {
		m := (lo + hi) / 2
		if latencyBuckets[m] < ms {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// totals sums the live slots of the window ending at now, counting only
// slots of interval > after (pass -1 for all).
func (w *window) totals(now time.Time, after int64) (count, failures int64) {
	e := now.UnixNano() / int64(slotWidth)
	for i := range w.slots {
		s := &w.slots[i]
		if ep := s.epoch.Load(); ep > e-windowSlots && ep <= e && ep > after {
			count += s.count.Load()
			failures += s.failures.Load()
		}
	}
	return
}

// quantile returns the q-quantile latency (ms) over the window, and false
// with no successful sample. It reads every bucket of every slot: callers on
// a hot path use stats.p95, which caches it.
func (w *window) quantile(now time.Time, q float64) (float64, bool) {
	e := now.UnixNano() / int64(slotWidth)
	var sumArr [128]int64 // len(latencyBuckets)+1 fits; no allocation
	sum := sumArr[:len(latencyBuckets)+1]
	var n int64
	for i := range w.slots {
		s := &w.slots[i]
		if ep := s.epoch.Load(); ep > e-windowSlots && ep <= e {
			for j := range s.buckets {
				c := s.buckets[j].Load()
				sum[j] += c
				n += c
			}
		}
	}
	if n == 0 {
		return 0, false
	}
	target := int64(math.Ceil(q * float64(n)))
	var acc int64
	for j, c := range sum {
		acc += c
		if acc >= target {
			if j >= len(latencyBuckets) {
				return latencyBuckets[len(latencyBuckets)-1], true
			}
			return latencyBuckets[j], true
		}
	}
	return latencyBuckets[len(latencyBuckets)-1], true
}

// ewma is a lock-free exponentially weighted moving average of latency in
// ms, stored as float64 bits.
type ewma struct {
	bits atomic.Uint64
	n    atomic.Int64
}

func (e *ewma) add(ms float64, alpha float64) {
	e.n.Add(1)
	for {
		old := e.bits.Load()
		v := math.Float64frombits(old)
		nv := ms
		if old != 0 {
			nv = alpha*ms + (1-alpha)*v
		}
		if e.bits.CompareAndSwap(old, math.Float64bits(nv)) {
			return
		}
	}
}

func (e *ewma) value() (float64, int64) { return math.Float64frombits(e.bits.Load()), e.n.Load() }

// stats is the per-endpoint state that outlives snapshots.
type stats struct {
	inflight atomic.Int32
	lat      ewma
	win      *window
	br       breaker
	// readySince is when the endpoint was first seen routable (unix ns), for
	// slow start; 0 while not routable.
	readySince atomic.Int64
	// p95 caches the window's p95 (float64 bits; 0 = none) until p95At+1s.
	p95Bits atomic.Uint64
	p95At   atomic.Int64
}

// p95 returns the window's p95 latency in ms, recomputed at most once a
// second (wlc reads it for every candidate of every pick).
func (s *stats) p95(now int64) (float64, bool) {
	if at := s.p95At.Load(); now-at < int64(time.Second) && at != 0 {
		v := math.Float64frombits(s.p95Bits.Load())
		return v, v > 0
	}
	v, ok := s.win.quantile(time.Unix(0, now), 0.95)
	if !ok {
		v = 0
	}
	s.p95Bits.Store(math.Float64bits(v))
	s.p95At.Store(now)
	return v, ok
}

func newStats(cfg BreakerConfig) *stats {
	s := &stats{win: newWindow()}
	s.br.cfg = cfg
	return s
}
