package shutdown

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRetryAfter is the Retry-After sent with refused requests when
// Tracker.RetryAfter is zero. One second is enough for a client that
// re-resolves to pick another instance, and short enough not to stall one
// that retries the same address blindly.
const DefaultRetryAfter = time.Second

// Tracker counts in-flight requests and, once told to Refuse, turns new ones
// away and reports when the last one has ended.
//
// The zero value is ready to use. Each successful Begin must be paired with
// exactly one End; Middleware does that for HTTP handlers.
type Tracker struct {
	// RetryAfter is sent in the Retry-After header of refused requests,
	// rounded up to whole seconds; zero means DefaultRetryAfter. Set it
	// before calling Middleware: the header value is fixed there.
	RetryAfter time.Duration

	// atomic: the only state Begin and End touch. They are kept as two words
	// rather than one packed word so that End can detect a missing Begin;
	// Go's atomics are sequentially consistent, which is what makes the
	// Begin/Refuse handshake below correct.
	n        atomic.Int64 // in flight (plus, for an instant, a Begin being refused)
	refusing atomic.Bool  // set once by Refuse, never cleared

	// cold path: idle is made lazily so the zero value works, and closed
	// once when n reaches 0 while refusing.
	initOnce sync.Once
	idleOnce sync.Once
	idle     chan struct{}
}

// NewTracker returns a Tracker with default settings; it is the same as
// new(Tracker).
func NewTracker() *Tracker { return new(Tracker) }

// Begin admits a unit of work and reports whether it was admitted. After
// Refuse it returns false, and the caller must turn the work away without
// calling End.
func (t *Tracker) Begin() (ok bool) {
	// Checked first so that a refusing Tracker does not keep the counter's
	// cache line bouncing between cores.
	if t.refusing.Load() {
		return false
	}
	t.n.Add(1)
	// Refuse sets refusing and then reads n; we add to n and then read
	// refusing. With sequentially consistent atomics at least one of us sees
	// the other, so either Refuse sees this request in flight, or we see
	// refusing and back out (and our End signals idle if we were the last).
	if t.refusing.Load() {
		t.End()
		return false
	}
	return true
}

// End marks the end of work admitted by Begin. It panics if called more
// often than Begin succeeded, since the count would then be meaningless.
func (t *Tracker) End() {
	n := t.n.Add(-1)
	if n < 0 {
		panic("shutdown: Tracker.End without a matching Begin")
	}
	if n == 0 && t.refusing.Load() {
		t.signalIdle()
	}
}

// InFlight returns the number of units of work admitted and not yet ended.
// It is a snapshot, meant for reports and metrics.
func (t *Tracker) InFlight() int64 { return t.n.Load() }

// Refuse makes every later Begin return false (and Middleware answer 503).
// It is idempotent and never undone: a draining instance does not come back.
func (t *Tracker) Refuse() {
	if t.refusing.Swap(true) {
		return
	}
	if t.n.Load() == 0 {
		t.signalIdle()
	}
}

// Refusing reports whether Refuse has been called.
func (t *Tracker) Refusing() bool { return t.refusing.Load() }

// Wait blocks until Refuse has been called and no work is in flight, or until
// ctx is done, in which case it returns ctx.Err(). Called before Refuse, it
// waits for Refuse as well: an idle but still admitting Tracker is not
// drained. It never spins: End signals a channel when the count reaches zero.
func (t *Tracker) Wait(ctx context.Context) error {
	idle := t.idleChan()
	select {
	case <-idle:
		return nil
	default:
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		// Both may be ready; prefer the drained answer so the result does
		// not depend on select's random choice.
		select {
		case <-idle:
			return nil
		default:
			return ctx.Err()
		}
	}
}

func (t *Tracker) idleChan() chan struct{} {
	t.initOnce.Do(func() { t.idle = make(chan struct{}) })
	return t.idle
}

func (t *Tracker) signalIdle() {
	idle := t.idleChan()
	t.idleOnce.Do(func() { close(idle) })
}

// refusedBody is short on purpose: it is for a human reading a log, the
// status code and Retry-After are for the client.
const refusedBody = "service is draining; retry on another instance"

// Middleware counts each request from the moment it is admitted until
// next.ServeHTTP returns, so a streaming response (text/event-stream, chunked
// tokens) counts until its last byte is written. After Refuse it answers
// 503 Service Unavailable with Retry-After and a short plain-text body,
// without calling next, and asks the client to close the connection
// (Connection: close), so that pooled keep-alive connections to this
// instance are dropped and the next attempt re-resolves elsewhere.
//
// The admitted path does not allocate. A handler that panics is still
// counted as ended.
func (t *Tracker) Middleware(next http.Handler) http.Handler {
	d := t.RetryAfter
	if d <= 0 {
		d = DefaultRetryAfter
	}
	retryAfter := strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !t.Begin() {
			h := w.Header()
			h.Set("Retry-After", retryAfter)
			h.Set("Connection", "close")
			http.Error(w, refusedBody, http.StatusServiceUnavailable)
			return
		}
		defer t.End()
		next.ServeHTTP(w, r)
	})
}
