package warmup

import (
	"context"
	"time"
)

// Clock is the time source of Run and Until: Now measures rounds and the
// total budget, Sleep waits out back-off. Injected so that tests can drive a
// whole warm-up schedule without real waiting.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d, or until ctx is done, in which case it returns
	// ctx.Err().
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the wall clock. Its zero value is ready to use and safe for
// concurrent use.
type RealClock struct{}

var _ Clock = RealClock{}

// Now returns time.Now(), which carries a monotonic reading, so measured
// durations are immune to wall-clock steps.
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits for d or until ctx is done.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
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
