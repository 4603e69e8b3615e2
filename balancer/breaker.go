package balancer

import (
	"sync/atomic"
	"time"
)

// BreakerConfig tunes the per-endpoint circuit breaker.
type BreakerConfig struct {
	// FailureRatio opens the breaker when failures/requests over the 60 s
	// window reach it (default 0.5).
	FailureRatio float64
	// MinRequests is the least number of requests in the window before the
	// ratio counts (default 20).
	MinRequests int64
	// OpenFor is how long the breaker stays open before admitting probes
	// (default 5 s).
	OpenFor time.Duration
	// Probes is how many requests half-open admits at once (default 3).
	Probes int32
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.FailureRatio <= 0 {
		c.FailureRatio = 0.5
	}
	if c.MinRequests <= 0 {
		c.MinRequests = 20
	}
	if c.OpenFor <= 0 {
		c.OpenFor = 5 * time.Second
	}
	if c.Probes <= 0 {
		c.Probes = 3
	}
	return c
}

// Breaker states.
const (
	closed int32 = iota
	open
	halfOpen
)

// breaker is a closed / open / half-open circuit breaker; all atomics.
type breaker struct {
	cfg       BreakerConfig
	state     atomic.Int32
	openUntil atomic.Int64 // unix ns
	probes    atomic.Int32 // probes in flight while half-open
	probeOK   atomic.Int32 // successful probes while half-open
	// closedAt is the window interval in which the breaker last closed:
	// failures from before it do not count again.
	closedAt atomic.Int64
}

// allow reports whether a request may go to the endpoint now, and whether
// it is a half-open probe (its outcome decides the state).
func (b *breaker) allow(now int64) (ok, probe bool) {
	switch b.state.Load() {
	case closed:
		return true, false
	case open:
		if now < b.openUntil.Load() {
			return false, false
		}
		if b.state.CompareAndSwap(open, halfOpen) {
			b.probes.Store(0)
			b.probeOK.Store(0)
		}
		fallthrough
	default: // half-open
		if b.probes.Add(1) <= b.cfg.Probes {
			return true, true
		}
		b.probes.Add(-1)
		return false, false
	}
}

// isOpen reports whether picks would be refused now (for filtering).
func (b *breaker) isOpen(now int64) bool {
	switch b.state.Load() {
	case open:
		return now < b.openUntil.Load()
	case halfOpen:
		return b.probes.Load() >= b.cfg.Probes
	}
	return false
}

// record feeds an outcome. w holds the window the ratio is computed over.
func (b *breaker) record(now time.Time, w *window, failed, probe bool) {
	if probe {
		b.probes.Add(-1)
		if failed {
			b.trip(now)
			return
		}
		if b.probeOK.Add(1) >= b.cfg.Probes && b.state.CompareAndSwap(halfOpen, closed) {
			b.closedAt.Store(now.UnixNano() / int64(slotWidth))
		}
		return
	}
	if !failed || b.state.Load() != closed {
		return
	}
	n, f := w.totals(now, b.closedAt.Load())
	if n >= b.cfg.MinRequests && float64(f) >= b.cfg.FailureRatio*float64(n) {
		b.trip(now)
	}
}

func (b *breaker) trip(now time.Time) {
	b.openUntil.Store(now.Add(b.cfg.OpenFor).UnixNano())
	b.state.Store(open)
	b.closedAt.Store(now.UnixNano() / int64(slotWidth))
}
