package shutdown

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when the test calls Advance. Tests use
// sleepers to learn that Run has reached a wait, instead of sleeping.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers map[*sleeper]struct{}
	changed  chan struct{} // closed and replaced whenever sleepers changes
}

type sleeper struct {
	until time.Time
	d     time.Duration
	wake  chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), sleepers: map[*sleeper]struct{}{}, changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	s := &sleeper{until: c.now.Add(d), d: d, wake: make(chan struct{})}
	c.sleepers[s] = struct{}{}
	c.notifyLocked()
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.sleepers[s]; !ok { // woken at the same moment
			return nil
		}
		delete(c.sleepers, s)
		c.notifyLocked()
		return ctx.Err()
	}
}

func (c *fakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Advance moves the clock and wakes every sleeper that is due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for s := range c.sleepers {
		if !s.until.After(c.now) {
			delete(c.sleepers, s)
			close(s.wake)
		}
	}
	c.notifyLocked()
}

// waitSleepers blocks until exactly the given durations are being slept
// (in any order), failing the test after a generous real-time limit.
func (c *fakeClock) waitSleepers(t *testing.T, want ...time.Duration) {
	t.Helper()
	limit := time.NewTimer(10 * time.Second)
	defer limit.Stop()
	for {
		c.mu.Lock()
		got := map[time.Duration]int{}
		for s := range c.sleepers {
			got[s.d]++
		}
		ch := c.changed
		c.mu.Unlock()
		exp := map[time.Duration]int{}
		for _, d := range want {
			exp[d]++
		}
		if equalCounts(got, exp) {
			return
		}
		select {
		case <-ch:
		case <-limit.C:
			t.Fatalf("sleepers: got %v, want %v", got, exp)
		}
	}
}

func equalCounts(a, b map[time.Duration]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
