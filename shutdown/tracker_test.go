package shutdown

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestTrackerZeroValue(t *testing.T) {
	var tr Tracker
	if !tr.Begin() || !tr.Begin() || tr.InFlight() != 2 || tr.Refusing() {
		t.Fatal("zero Tracker does not admit")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait before Refuse = %v, want context.Canceled", err)
	}
	tr.Refuse()
	tr.Refuse() // idempotent
	if tr.Begin() || !tr.Refusing() || tr.InFlight() != 2 {
		t.Fatal("refusing Tracker admitted")
	}
	if err := tr.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with work in flight = %v", err)
	}
	tr.End()
	tr.End()
	// Drained now: Wait answers nil even on a cancelled ctx.
	if err := tr.Wait(ctx); err != nil {
		t.Fatalf("Wait when drained = %v", err)
	}
	tr.Refuse()
	if err := tr.Wait(ctx); err != nil {
		t.Fatalf("Wait after a second Refuse = %v", err)
	}
}

func TestTrackerRefuseWhenIdle(t *testing.T) {
	tr := NewTracker()
	tr.Refuse()
	if err := tr.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestTrackerWaitsForRefuse(t *testing.T) {
	// Idle but still admitting is not drained.
	tr := NewTracker()
	done := make(chan error, 1)
	go func() { done <- tr.Wait(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before Refuse", err)
	case <-time.After(20 * time.Millisecond):
	}
	tr.Refuse()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestTrackerEndWithoutBegin(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("End without Begin did not panic")
		}
	}()
	new(Tracker).End()
}

// TestTrackerHammer: 100 goroutines begin and end while Refuse and Wait
// happen; every admitted unit must have ended when Wait returns, and no
// Begin may succeed after Refuse has returned.
func TestTrackerHammer(t *testing.T) {
	for round := range 20 {
		tr := NewTracker()
		var (
			active   atomic.Int64 // maintained independently of the Tracker
			admitted atomic.Int64
			refused  atomic.Bool // set after Refuse returns
			lateOK   atomic.Int64
			wg       sync.WaitGroup
			start    = make(chan struct{})
		)
		for range 100 {
			wg.Go(func() {
				<-start
				for i := 0; ; i++ {
					wasRefused := refused.Load()
					if !tr.Begin() {
						return
					}
					if wasRefused {
						lateOK.Add(1)
					}
					active.Add(1)
					admitted.Add(1)
					if i%8 == 0 {
						time.Sleep(time.Microsecond) // let Refuse land mid-request
					}
					active.Add(-1)
					tr.End()
				}
			})
		}
		close(start)
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		type waitResult struct {
			err    error
			active int64
		}
		var waitWG sync.WaitGroup
		results := make(chan waitResult, 2)
		for range 2 { // two waiters, to check both are released
			waitWG.Go(func() {
				err := tr.Wait(context.Background())
				results <- waitResult{err, active.Load()}
			})
		}
		tr.Refuse()
		refused.Store(true)
		waitWG.Wait()
		wg.Wait()
		close(results)
		for r := range results {
			if r.err != nil || r.active != 0 {
				t.Fatalf("round %d: Wait returned %v with %d still active", round, r.err, r.active)
			}
		}
		if tr.InFlight() != 0 || lateOK.Load() != 0 {
			t.Fatalf("round %d: in flight %d, admitted after Refuse %d", round, tr.InFlight(), lateOK.Load())
		}
		if round == 0 {
			t.Logf("admitted %d before Refuse", admitted.Load())
		}
	}
}

func TestMiddlewareRefusal(t *testing.T) {
	for _, tc := range []struct {
		retryAfter time.Duration
		want       string
	}{{0, "1"}, {time.Second, "1"}, {1500 * time.Millisecond, "2"}, {10 * time.Second, "10"}} {
		tr := &Tracker{RetryAfter: tc.retryAfter}
		called := false
		h := tr.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
		tr.Refuse()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
		if called || w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != tc.want ||
			w.Header().Get("Connection") != "close" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") ||
			!strings.Contains(w.Body.String(), "draining") {
			t.Errorf("RetryAfter %v: called %v, %d %v %q", tc.retryAfter, called, w.Code, w.Header(), w.Body.String())
		}
	}
}

func TestMiddlewareHandlerPanicStillEnds(t *testing.T) {
	tr := NewTracker()
	h := tr.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	func() {
		defer func() { _ = recover() }()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	if tr.InFlight() != 0 {
		t.Fatalf("in flight %d after a panicking handler", tr.InFlight())
	}
}

// TestMiddlewareStreaming: a text/event-stream response that is still being
// written when Refuse happens completes, Wait returns only after its handler
// has returned, and a new request meanwhile gets 503.
func TestMiddlewareStreaming(t *testing.T) {
	tr := NewTracker()
	next := make(chan struct{}) // one token per receive
	var handlerDone atomic.Bool
	h := tr.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer handlerDone.Store(true)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := range 3 {
			if i > 0 {
				<-next
			}
			fmt.Fprintf(w, "data: token%d\n\n", i)
			f.Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	readEvent := func() string {
		t.Helper()
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if _, err := br.ReadString('\n'); err != nil { // blank separator
			t.Fatal(err)
		}
		return strings.TrimSpace(line)
	}
	if got := readEvent(); got != "data: token0" {
		t.Fatalf("first event %q", got)
	}

	tr.Refuse() // mid-stream
	waited := make(chan bool, 1)
	go func() {
		err := tr.Wait(context.Background())
		waited <- err == nil && handlerDone.Load()
	}()

	// A new request is refused while the stream goes on.
	r2, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r2.Body)
	r2.Body.Close()
	if r2.StatusCode != http.StatusServiceUnavailable || r2.Header.Get("Retry-After") != "1" {
		t.Fatalf("request after Refuse: %d Retry-After %q", r2.StatusCode, r2.Header.Get("Retry-After"))
	}
	select {
	case <-waited:
		t.Fatal("Wait returned while the stream was still being written")
	case <-time.After(20 * time.Millisecond):
	}

	for want := 1; want < 3; want++ {
		next <- struct{}{}
		if got := readEvent(); got != fmt.Sprintf("data: token%d", want) {
			t.Fatalf("event %q", got)
		}
	}
	if got := readEvent(); got != "data: [DONE]" {
		t.Fatalf("last event %q", got)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after [DONE]: %q, %v", rest, err)
	}
	select {
	case ok := <-waited:
		if !ok {
			t.Fatal("Wait returned before the handler had returned, or with an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the stream ended")
	}
}
