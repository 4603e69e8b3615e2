package balancer

import (
	"sync/atomic"
	"time"
)

// RetryBudget allows retries only while they stay under a share of recent
// requests, so retries never amplify an overload (Finagle's retry budget):
// every request deposits Ratio tokens, every retry withdraws one, and
// MinPerSecond retries are always allowed so a quiet client can still retry.
// Lock-free; tokens decay with a 10 s window.
type RetryBudget struct {
	// Ratio of retries to requests allowed (default 0.2).
	Ratio float64
	// MinPerSecond retries allowed regardless of traffic (default 1).
	MinPerSecond float64
	// Now is the clock (default time.Now).
	Now func() time.Time

	requests atomic.Int64
	retries  atomic.Int64
	epoch    atomic.Int64 // window start, unix s
}

const budgetWindow = 10 // seconds

func (r *RetryBudget) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *RetryBudget) roll() {
	now := r.now().Unix()
	e := r.epoch.Load()
	if now-e >= budgetWindow && r.epoch.CompareAndSwap(e, now) {
		// Carry half over, so the budget decays rather than resets.
		r.requests.Store(r.requests.Load() / 2)
		r.retries.Store(r.retries.Load() / 2)
	}
}

// Request records a first attempt.
func (r *RetryBudget) Request() {
	r.roll()
	r.requests.Add(1)
}

// TryRetry reports whether a retry is allowed now, and counts it if so.
func (r *RetryBudget) TryRetry() bool {
	r.roll()
	ratio := r.Ratio
	if ratio <= 0 {
		ratio = 0.2
	}
	minPS := r.MinPerSecond
	if minPS <= 0 {
		minPS = 1
	}
	allowed := ratio*float64(r.requests.Load()) + minPS*budgetWindow
	if float64(r.retries.Add(1)) > allowed {
		r.retries.Add(-1)
		return false
	}
	return true
}
