//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

// watcher records every instance list a subscription delivers.
type watcher struct {
	mu     sync.Mutex
	latest []nacosreg.Instance
	count  int
	signal chan struct{}
}

func newWatcher() *watcher { return &watcher{signal: make(chan struct{}, 1)} }

func (w *watcher) push(list []nacosreg.Instance) {
	w.mu.Lock()
	w.latest, w.count = list, w.count+1
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

func (w *watcher) pushes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// waitFor blocks until pred holds for the latest list and returns how long it
// took from start; it fails the test after timeout.
func (w *watcher) waitFor(t *testing.T, what string, start time.Time, timeout time.Duration, pred func([]nacosreg.Instance) bool) time.Duration {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		ok := pred(w.latest)
		w.mu.Unlock()
		if ok {
			return time.Since(start)
		}
		select {
		case <-w.signal:
		case <-deadline.C:
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("%s: not seen within %v; last list: %+v", what, timeout, w.latest)
		}
	}
}

// buildBinary builds one of the module's commands for a test that runs it as
// a real process.
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, "../../"+pkg)
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

func find(list []nacosreg.Instance, ip string, port int) *nacosreg.Instance {
	for i := range list {
		if list[i].IP == ip && list[i].Port == port {
			return &list[i]
		}
	}
	return nil
}
