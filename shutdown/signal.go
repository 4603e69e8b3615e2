package shutdown

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Notify handles SIGTERM and SIGINT. The first one calls graceful on a new
// goroutine with a context derived from ctx; the second cancels that context
// and calls force (the bridge passes a func that exits with status 1).
// Later signals are swallowed. Either func may be nil.
//
// Cancelling ctx cancels graceful's context too, but does not stop the
// handling: once Notify returns, the default action (exit) is disabled until
// stop is called, so a signal must always find someone listening.
//
// stop restores the default handling, cancels graceful's context, and waits
// for graceful to return; it is idempotent and safe to call from any
// goroutine except the ones running graceful or force, which it would wait
// for.
func Notify(ctx context.Context, graceful func(ctx context.Context), force func()) (stop func()) {
	// Two slots: the watcher reads promptly, but the first two signals are
	// the ones that matter and neither may be dropped.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	stopWatch := notifyWith(ctx, sigs, graceful, force)
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(sigs)
			stopWatch()
		})
	}
}

// notifyWith is Notify with the signal source injected, so tests can send
// signals without touching the process.
func notifyWith(ctx context.Context, sigs <-chan os.Signal, graceful func(context.Context), force func()) (stop func()) {
	gctx, cancel := context.WithCancel(ctx)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		n := 0
		for {
			select {
			case <-quit:
				return
			case <-sigs:
				n++
				switch n {
				case 1:
					if graceful != nil {
						wg.Go(func() { graceful(gctx) })
					}
				case 2:
					// Cancel first: if force does not exit, graceful
					// still cuts its waits short.
					cancel()
					if force != nil {
						force()
					}
				}
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			cancel()
			wg.Wait()
		})
	}
}
