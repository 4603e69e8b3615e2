package shutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// planEnv runs a Plan against a fake clock and a tracked handler, and
// records what the Nacos-side funcs saw.
type planEnv struct {
	t      *testing.T
	clk    *fakeClock
	tr     *Tracker
	h      http.Handler
	cancel context.CancelFunc

	mu     sync.Mutex
	events []string // "mark refusing=false", "dereg refusing=true inflight=0 ctxErr=<nil>"

	slowWG sync.WaitGroup // slow requests: every one is joined by the test
}

// call is a MarkDraining or Deregister stand-in.
type callFunc func(ctx context.Context) error

func ok(context.Context) error { return nil }

var errMark, errDereg = errors.New("mark boom"), errors.New("dereg boom")

func fail(err error) callFunc { return func(context.Context) error { return err } }

func hang(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

// record wraps f so that the env records the call and the tracker's state.
func (e *planEnv) record(name string, f callFunc) func(context.Context) error {
	return func(ctx context.Context) error {
		e.mu.Lock()
		e.events = append(e.events, fmt.Sprintf("%s refusing=%v inflight=%d ctxErr=%v", name, e.tr.Refusing(), e.tr.InFlight(), ctx.Err()))
		e.mu.Unlock()
		return f(ctx)
	}
}

// get sends a request that the handler answers at once.
func (e *planEnv) get() *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/fast", nil))
	return w
}

// slow starts a request whose handler runs until release is closed; it
// returns once the handler has been entered.
func (e *planEnv) slow() (release func(), result <-chan *httptest.ResponseRecorder) {
	rel := make(chan struct{})
	entered := make(chan struct{})
	res := make(chan *httptest.ResponseRecorder, 1)
	e.slowWG.Go(func() {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/slow", nil)
		r = r.WithContext(context.WithValue(r.Context(), slowKey{}, [2]chan struct{}{entered, rel}))
		e.h.ServeHTTP(w, r)
		res <- w
	})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		e.t.Fatal("slow request was not admitted")
	}
	var once sync.Once
	return func() { once.Do(func() { close(rel) }) }, res
}

type slowKey struct{}

func testHandler(w http.ResponseWriter, r *http.Request) {
	if chans, ok := r.Context().Value(slowKey{}).([2]chan struct{}); ok {
		close(chans[0])
		<-chans[1]
		io.WriteString(w, "slow done")
		return
	}
	io.WriteString(w, "fast done")
}

func wantServed(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d, want 200 (body %q)", w.Code, w.Body.String())
	}
}

func wantRefused(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("status %d Retry-After %q, want 503 with Retry-After 1", w.Code, w.Header().Get("Retry-After"))
	}
}

type wantStep struct {
	took time.Duration
	err  error // matched with errors.Is; nil means no error
}

func TestPlanRun(t *testing.T) {
	const callTO = 5 * time.Second // DefaultCallTimeout, as a sleeper duration
	tests := []struct {
		name          string
		plan          func(p *Plan)
		mark, dereg   callFunc
		preCancel     bool
		script        func(t *testing.T, e *planEnv)
		want          []wantStep // mark-draining, propagate, drain, deregister
		wantAbandoned int64
		wantForced    bool
		wantEvents    []string
	}{{
		name: "clean drain: served during the delay, refused after, in-flight finishes",
		mark: ok, dereg: ok,
		script: func(t *testing.T, e *planEnv) {
			e.clk.waitSleepers(t, 3*time.Second) // propagating, MarkDraining done
			wantServed(t, e.get())
			release, res := e.slow()
			e.clk.Advance(2 * time.Second)
			wantServed(t, e.get()) // late arrival, still within the delay
			e.clk.Advance(time.Second)
			e.clk.waitSleepers(t, 30*time.Second) // draining
			wantRefused(t, e.get())
			e.clk.Advance(4 * time.Second)
			release()
			w := <-res
			wantServed(t, w)
			if w.Body.String() != "slow done" {
				t.Fatalf("slow body %q", w.Body.String())
			}
		},
		want:       []wantStep{{0, nil}, {3 * time.Second, nil}, {4 * time.Second, nil}, {0, nil}},
		wantEvents: []string{"mark refusing=false inflight=0 ctxErr=<nil>", "dereg refusing=true inflight=0 ctxErr=<nil>"},
	}, {
		name: "custom delays, nothing in flight",
		plan: func(p *Plan) { p.PropagationDelay = time.Second; p.DrainTimeout = 10 * time.Second },
		mark: ok, dereg: ok,
		script: func(t *testing.T, e *planEnv) {
			e.clk.waitSleepers(t, time.Second)
			e.clk.Advance(time.Second)
		},
		want:       []wantStep{{0, nil}, {time.Second, nil}, {0, nil}, {0, nil}},
		wantEvents: []string{"mark refusing=false inflight=0 ctxErr=<nil>", "dereg refusing=true inflight=0 ctxErr=<nil>"},
	}, {
		name: "drain timeout reports the abandoned count and still deregisters",
		plan: func(p *Plan) { p.PropagationDelay = time.Second; p.DrainTimeout = 10 * time.Second },
		mark: ok, dereg: ok,
		script: func(t *testing.T, e *planEnv) {
			e.clk.waitSleepers(t, time.Second)
			release1, res1 := e.slow()
			release2, res2 := e.slow()
			e.clk.Advance(time.Second)
			e.clk.waitSleepers(t, 10*time.Second)
			e.clk.Advance(10 * time.Second)
			t.Cleanup(func() { release1(); release2(); <-res1; <-res2 })
		},
		want:          []wantStep{{0, nil}, {time.Second, nil}, {10 * time.Second, ErrDrainTimeout}, {0, nil}},
		wantAbandoned: 2,
		wantEvents:    []string{"mark refusing=false inflight=0 ctxErr=<nil>", "dereg refusing=true inflight=2 ctxErr=<nil>"},
	}, {
		name: "MarkDraining error is recorded, draining goes on",
		mark: fail(errMark), dereg: ok,
		script: func(t *testing.T, e *planEnv) {
			e.clk.waitSleepers(t, 3*time.Second)
			wantServed(t, e.get())
			e.clk.Advance(3 * time.Second)
		},
		want:       []wantStep{{0, errMark}, {3 * time.Second, nil}, {0, nil}, {0, nil}},
		wantEvents: []string{"mark refusing=false inflight=0 ctxErr=<nil>", "dereg refusing=true inflight=0 ctxErr=<nil>"},
	}, {
		name: "Deregister error is recorded",
		mark: ok, dereg: fail(errDereg),
		script: func(t *testing.T, e *planEnv) {
			e.clk.waitSleepers(t, 3*time.Second)
			e.clk.Advance(3 * time.Second)
		},
		want:       []wantStep{{0, nil}, {3 * time.Second, nil}, {0, nil}, {0, errDereg}},
		wantEvents: []string{"mark refusing=false inflight=0 ctxErr=<nil>", "dereg refusing=true inflight=0 ctxErr=<nil>"},
	}, {
		name: "hung MarkDraining and Deregister are cut at CallTimeout",
		mark: hang, dereg: hang,
		plan: func(p *Plan) { p.PropagationDelay = time.Second },
		script: func(t *testing.T, e *planEnv) {
			e.clk.waitSleepers(t, callTO)
			e.clk.Advance(callTO)
			e.clk.waitSleepers(t, time.Second)
			e.clk.Advance(time.Second)
			e.clk.waitSleepers(t, callTO) // deregistering
			e.clk.Advance(callTO)
		},
		want:       []wantStep{{callTO, ErrCallTimeout}, {time.Second, nil}, {0, nil}, {callTO, ErrCallTimeout}},
		wantEvents: []string{"mark refusing=false inflight=0 ctxErr=<nil>", "dereg refusing=true inflight=0 ctxErr=<nil>"},
	}, {
		name: "forced during the propagation delay: no more waits, still deregisters",
		mark: ok, dereg: ok,
		script: func(t *testing.T, e *planEnv) {
			e.clk.waitSleepers(t, 3*time.Second)
			release, res := e.slow()
			e.clk.Advance(time.Second)
			e.cancel()
			t.Cleanup(func() { release(); <-res })
		},
		want:          []wantStep{{0, nil}, {time.Second, context.Canceled}, {0, context.Canceled}, {0, nil}},
		wantAbandoned: 1,
		wantForced:    true,
		wantEvents:    []string{"mark refusing=false inflight=0 ctxErr=<nil>", "dereg refusing=true inflight=1 ctxErr=<nil>"},
	}, {
		name: "forced during the drain",
		mark: ok, dereg: ok,
		script: func(t *testing.T, e *planEnv) {
			e.clk.waitSleepers(t, 3*time.Second)
			release, res := e.slow()
			e.clk.Advance(3 * time.Second)
			e.clk.waitSleepers(t, 30*time.Second)
			e.clk.Advance(7 * time.Second)
			e.cancel()
			t.Cleanup(func() { release(); <-res })
		},
		want:          []wantStep{{0, nil}, {3 * time.Second, nil}, {7 * time.Second, context.Canceled}, {0, nil}},
		wantAbandoned: 1,
		wantForced:    true,
		wantEvents:    []string{"mark refusing=false inflight=0 ctxErr=<nil>", "dereg refusing=true inflight=1 ctxErr=<nil>"},
	}, {
		name: "forced before Run: every wait skipped, still refuses and deregisters",
		mark: ok, dereg: ok,
		preCancel:  true,
		script:     func(t *testing.T, e *planEnv) {},
		want:       []wantStep{{0, nil}, {0, context.Canceled}, {0, nil}, {0, nil}},
		wantForced: true,
		wantEvents: []string{"mark refusing=false inflight=0 ctxErr=context canceled", "dereg refusing=true inflight=0 ctxErr=<nil>"},
	}, {
		name: "negative durations: no waits at all",
		plan: func(p *Plan) { p.PropagationDelay = -1; p.DrainTimeout = -1 },
		mark: ok, dereg: ok,
		script:     func(t *testing.T, e *planEnv) {},
		want:       []wantStep{{0, nil}, {0, nil}, {0, nil}, {0, nil}},
		wantEvents: []string{"mark refusing=false inflight=0 ctxErr=<nil>", "dereg refusing=true inflight=0 ctxErr=<nil>"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &planEnv{t: t, clk: newFakeClock(), tr: NewTracker()}
			e.h = e.tr.Middleware(http.HandlerFunc(testHandler))
			t.Cleanup(e.slowWG.Wait) // registered first, so it runs after the releases
			p := Plan{
				MarkDraining: e.record("mark", tc.mark),
				Deregister:   e.record("dereg", tc.dereg),
				Tracker:      e.tr,
				Clock:        e.clk,
			}
			if tc.plan != nil {
				tc.plan(&p)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e.cancel = cancel
			if tc.preCancel {
				cancel()
			}
			done := make(chan Report, 1)
			go func() { done <- p.Run(ctx) }()
			tc.script(t, e)
			var r Report
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return")
			}

			names := []string{StepMarkDraining, StepPropagate, StepDrain, StepDeregister}
			if len(r.Steps) != len(names) {
				t.Fatalf("steps %v", r)
			}
			for i, s := range r.Steps {
				w := tc.want[i]
				if s.Name != names[i] || s.Took != w.took || (w.err == nil) != (s.Err == nil) || (w.err != nil && !errors.Is(s.Err, w.err)) {
					t.Errorf("step %d = {%s %v %v}, want {%s %v %v}", i, s.Name, s.Took, s.Err, names[i], w.took, w.err)
				}
			}
			if r.Abandoned != tc.wantAbandoned || r.Forced != tc.wantForced {
				t.Errorf("abandoned %d forced %v, want %d %v", r.Abandoned, r.Forced, tc.wantAbandoned, tc.wantForced)
			}
			if !e.tr.Refusing() {
				t.Error("tracker not refusing after Run")
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if strings.Join(e.events, "\n") != strings.Join(tc.wantEvents, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(e.events, "\n"), strings.Join(tc.wantEvents, "\n"))
			}
			t.Log(r)
		})
	}
}

func TestPlanZeroValue(t *testing.T) {
	// Nil funcs and Tracker: the only wait left is the default propagation
	// delay, and every step succeeds.
	clk := newFakeClock()
	done := make(chan Report, 1)
	go func() { done <- Plan{Clock: clk}.Run(context.Background()) }()
	clk.waitSleepers(t, DefaultPropagationDelay)
	clk.Advance(DefaultPropagationDelay)
	r := <-done
	if err := r.Err(); err != nil || r.Forced || r.Abandoned != 0 || len(r.Steps) != 4 {
		t.Fatalf("report %v, err %v", r, err)
	}

	// A nil Clock is the system clock; negative durations mean no waits.
	r = Plan{PropagationDelay: -1, DrainTimeout: -1, Tracker: NewTracker()}.Run(context.Background())
	if err := r.Err(); err != nil || r.Forced {
		t.Fatalf("report %v, err %v", r, err)
	}
}

func TestReportString(t *testing.T) {
	r := Report{
		Steps: []Step{
			{StepMarkDraining, 2 * time.Millisecond, nil},
			{StepPropagate, 3 * time.Second, nil},
			{StepDrain, 30 * time.Second, ErrDrainTimeout},
			{StepDeregister, 0, errors.New("nacos down")},
		},
		Abandoned: 2,
		Forced:    true,
	}
	want := "mark-draining ok 2ms, propagate ok 3s, drain failed 30s (shutdown: drain timeout), deregister failed 0s (nacos down); 2 abandoned; forced"
	if got := r.String(); got != want {
		t.Fatalf("String()\n got %s\nwant %s", got, want)
	}
	if err := r.Err(); !errors.Is(err, ErrDrainTimeout) || !strings.Contains(err.Error(), "deregister: nacos down") {
		t.Fatalf("Err() = %v", err)
	}
	if (Report{}).Err() != nil {
		t.Fatal("empty report has an error")
	}
}

func TestSystemClockSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if err := (SystemClock{}).Sleep(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := (SystemClock{}).Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sleep: %v", err)
	}
	if err := (SystemClock{}).Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("zero sleep on a cancelled ctx: %v", err)
	}
}
