package shutdown

import (
	"context"
	"time"
)

// Clock is the time source of a Plan. It is injected so that tests can run
// a 30-second drain in microseconds.
type Clock interface {
	// Now returns the current time; Run uses it to measure each step.
	Now() time.Time
	// Sleep blocks for d or until ctx is done. It returns nil when d has
	// passed and ctx.Err() otherwise; for d <= 0 it returns ctx.Err() at once.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real Clock; a Plan with a nil Clock uses it.
type SystemClock struct{}

var _ Clock = SystemClock{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep blocks for d or until ctx is done.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
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
