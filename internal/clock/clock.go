// Package clock is the time source the lifecycle packages share (warm-up
// rounds, drain waits), injected so tests drive whole schedules without real
// waiting. It has no state; System is safe for concurrent use.
package clock

import (
	"context"
	"time"
)

// Clock reads and waits on time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep blocks for d or until ctx is done. It returns nil when d has
	// passed and ctx.Err() otherwise; for d <= 0 it returns ctx.Err() at once.
	Sleep(ctx context.Context, d time.Duration) error
}

// System is the wall clock. time.Now carries a monotonic reading, so
// measured durations are immune to wall-clock steps.
type System struct{}

var _ Clock = System{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// Sleep blocks for d or until ctx is done.
func (System) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
