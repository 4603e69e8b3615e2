//go:build unix

package shutdown

import (
	"context"
	"syscall"
	"testing"
)

// TestNotifyRealSignal checks the wiring to os/signal with a real SIGTERM to
// this process. It is safe: Notify has registered the handler before it
// returns, so the signal is delivered to the channel, not the default action.
func TestNotifyRealSignal(t *testing.T) {
	called := make(chan struct{})
	stop := Notify(context.Background(), func(context.Context) { close(called) }, func() { t.Error("force called") })
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	recv(t, called, "graceful on a real SIGTERM")
}
