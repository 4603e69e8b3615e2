package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
)

func mustParse(t *testing.T, doc string) *inferencecfg.Config {
	t.Helper()
	c, err := inferencecfg.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hook is a reload endpoint that fails while failing is set and records
// the revisions it accepted.
type hook struct {
	mu      sync.Mutex
	failing bool
	tries   int
	got     []string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Rev string `json:"rev"`
	}
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries++
	if h.failing {
		http.Error(w, "loading", http.StatusServiceUnavailable)
		return
	}
	if err := json.Unmarshal(b, &body); err != nil || body.Rev == "" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	h.got = append(h.got, body.Rev)
}

func (h *hook) state() (tries int, got []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tries, append([]string(nil), h.got...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startHandoff runs a handoff to a failing hook (and file, when set) with
// the given back-off; both stop at the end of the test, and goleak checks
// that nothing is left running.
func startHandoff(t *testing.T, file string, backoff, maxBackoff time.Duration) (*hook, *handoff) {
	t.Helper()
	hk := &hook{failing: true}
	srv := httptest.NewServer(hk)
	h := newHandoff(srv.URL+"/reload", file, zerolog.Nop())
	h.backoff, h.maxBackoff = backoff, maxBackoff
	h.start()
	t.Cleanup(func() {
		h.close()
		h.client.CloseIdleConnections()
		srv.Close()
	})
	return hk, h
}

func TestHandoffRetriesAndWritesFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "inference.json")
	hk, h := startHandoff(t, file, time.Millisecond, 4*time.Millisecond)

	c1 := mustParse(t, "inference:\n  max-tokens: 77\n")
	h.offer(c1)
	waitFor(t, "the file", func() bool { _, err := os.Stat(file); return err == nil })
	var onDisk struct {
		Rev      string `json:"rev"`
		Defaults struct {
			MaxTokens int `json:"max-tokens"`
		} `json:"defaults"`
	}
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk.Rev != c1.Rev || onDisk.Defaults.MaxTokens != 77 {
		t.Fatalf("file %s: %v", b, err)
	}
	waitFor(t, "three failed tries", func() bool { n, _ := hk.state(); return n >= 3 })
	hk.mu.Lock()
	hk.failing = false
	hk.mu.Unlock()
	waitFor(t, "the hook to take rev 1", func() bool { _, got := hk.state(); return len(got) == 1 })
	if _, got := hk.state(); got[0] != c1.Rev {
		t.Fatalf("hook got %v, want %s", got, c1.Rev)
	}
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
}

// A newer config replaces one still being retried: the backend never gets
// the old one after the new.
func TestHandoffNewerWins(t *testing.T) {
	hk, h := startHandoff(t, "", time.Millisecond, 2*time.Millisecond)

	c1 := mustParse(t, "inference:\n  max-tokens: 1\n")
	c2 := mustParse(t, "inference:\n  max-tokens: 2\n")
	h.offer(c1)
	waitFor(t, "a failed try", func() bool { n, _ := hk.state(); return n >= 1 })
	h.offer(c2)
	time.Sleep(20 * time.Millisecond)
	hk.mu.Lock()
	hk.failing = false
	hk.mu.Unlock()
	waitFor(t, "the hook to take a config", func() bool { _, got := hk.state(); return len(got) >= 1 })
	time.Sleep(20 * time.Millisecond)
	if _, got := hk.state(); len(got) != 1 || got[0] != c2.Rev {
		t.Fatalf("hook got %v, want only the newer %s", got, c2.Rev)
	}
}

// close returns while the hook is still failing and its back-off is long:
// no goroutine is left retrying (goleak checks at the end).
func TestHandoffCloseWhileRetrying(t *testing.T) {
	hk, h := startHandoff(t, "", time.Hour, time.Hour)
	h.offer(mustParse(t, "inference:\n  max-tokens: 1\n"))
	waitFor(t, "a failed try", func() bool { n, _ := hk.state(); return n >= 1 })
	done := make(chan struct{})
	go func() { h.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("close did not return while the hook was failing")
	}
}
