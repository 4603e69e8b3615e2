package shutdown

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestNotifyFirstGracefulSecondForce(t *testing.T) {
	sigs := make(chan os.Signal)
	started := make(chan struct{})
	cancelled := make(chan error, 1)
	var forced atomic.Int32
	stop := notifyWith(context.Background(), sigs,
		func(ctx context.Context) {
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
		},
		func() { forced.Add(1) })

	sigs <- syscall.SIGTERM
	recv(t, started, "graceful")
	if forced.Load() != 0 {
		t.Fatal("force called on the first signal")
	}
	select {
	case <-cancelled:
		t.Fatal("graceful ctx cancelled by the first signal")
	default:
	}

	sigs <- os.Interrupt
	if err := recv(t, cancelled, "graceful ctx cancelled"); !errors.Is(err, context.Canceled) {
		t.Fatalf("graceful ctx: %v", err)
	}
	sigs <- syscall.SIGTERM // later signals are swallowed: the send completes, nothing more happens
	stop()
	stop() // idempotent
	if n := forced.Load(); n != 1 {
		t.Fatalf("force called %d times, want 1", n)
	}
}

func TestNotifyStopBeforeSignal(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	stop := notifyWith(context.Background(), sigs,
		func(context.Context) { t.Error("graceful called") },
		func() { t.Error("force called") })
	var wg sync.WaitGroup
	for range 3 { // concurrent stops are fine too
		wg.Go(stop)
	}
	wg.Wait()
	sigs <- syscall.SIGTERM // nobody listens any more; buffered, so this does not block
}

func TestNotifyStopCancelsAndJoinsGraceful(t *testing.T) {
	sigs := make(chan os.Signal)
	started := make(chan struct{})
	var finished atomic.Bool
	stop := notifyWith(context.Background(), sigs, func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		finished.Store(true)
	}, nil)
	sigs <- syscall.SIGTERM
	recv(t, started, "graceful")
	stop()
	if !finished.Load() {
		t.Fatal("stop returned before graceful did")
	}
}

func TestNotifyParentCtx(t *testing.T) {
	// Cancelling the parent cancels graceful's ctx but keeps listening, so a
	// second signal still forces.
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal)
	got := make(chan error, 1)
	forced := make(chan struct{})
	stop := notifyWith(ctx, sigs, func(ctx context.Context) { <-ctx.Done(); got <- ctx.Err() }, func() { close(forced) })
	defer stop()
	sigs <- syscall.SIGINT
	cancel()
	if err := recv(t, got, "graceful ctx"); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	sigs <- syscall.SIGINT
	recv(t, forced, "force")
}

func TestNotifyNilFuncs(t *testing.T) {
	sigs := make(chan os.Signal)
	stop := notifyWith(context.Background(), sigs, nil, nil)
	sigs <- syscall.SIGTERM
	sigs <- syscall.SIGTERM
	stop()
}

// TestNotifyGracefulRunsPlan wires Notify to a Plan the way the bridge does:
// the second signal turns the drain into the forced path.
func TestNotifyGracefulRunsPlan(t *testing.T) {
	clk := newFakeClock()
	tr := NewTracker()
	if !tr.Begin() {
		t.Fatal("not admitted")
	}
	defer tr.End()
	sigs := make(chan os.Signal)
	reports := make(chan Report, 1)
	stop := notifyWith(context.Background(), sigs, func(ctx context.Context) {
		reports <- Plan{Tracker: tr, Clock: clk}.Run(ctx)
	}, func() {})
	defer stop()
	sigs <- syscall.SIGTERM
	clk.waitSleepers(t, DefaultPropagationDelay)
	clk.Advance(DefaultPropagationDelay)
	clk.waitSleepers(t, DefaultDrainTimeout)
	sigs <- syscall.SIGTERM
	r := recv(t, reports, "report")
	if !r.Forced || r.Abandoned != 1 {
		t.Fatalf("report %v", r)
	}
}
