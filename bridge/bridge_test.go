package bridge

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/warmup"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Registry that keeps what it was asked to do. It stands in
// for our own interface only; the Nacos behaviour itself is tested against
// real servers in test/integration.
type recorder struct {
	mu    sync.Mutex
	calls []string
	last  map[string]string
}

func (r *recorder) add(op string, reg nacosreg.Registration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, op)
	r.last = reg.Metadata
	return nil
}
func (r *recorder) Register(reg nacosreg.Registration) error   { return r.add("register", reg) }
func (r *recorder) Update(reg nacosreg.Registration) error     { return r.add("update", reg) }
func (r *recorder) Deregister(reg nacosreg.Registration) error { return r.add("deregister", reg) }

// failFirst fails its first n calls, then passes.
func failFirst(n int64) (Checker, *atomic.Int64) {
	var calls atomic.Int64
	return CheckFunc(func(context.Context) error {
		if calls.Add(1) <= n {
			return errors.New("not yet")
		}
		return nil
	}), &calls
}

// TestProbesRecorded runs a bridge through readiness failures, warm-up and
// a failing then passing inference probe, and checks that every probe run
// is counted by result and timed, and that the run ends STOPPED and
// deregistered.
func TestProbesRecorded(t *testing.T) {
	reg := &recorder{}
	ready, readyCalls := failFirst(2)
	var infCalls atomic.Int64
	b, err := New(Config{Service: "svc", IP: "127.0.0.1", Port: 8000, Cycle: 5 * time.Millisecond, InferenceEvery: 1,
		PropagationDelay: time.Millisecond, DrainTimeout: time.Second,
		Warmup: warmup.Config{Rounds: 1, Backoff: time.Millisecond, MaxBackoff: time.Millisecond}},
		reg,
		WithLiveness(CheckFunc(func(context.Context) error { return nil })),
		WithReadiness(ready),
		WithInferenceProbe(func(context.Context) (time.Duration, error) {
			if infCalls.Add(1) == 1 {
				return 0, errors.New("CUDA error: out of memory")
			}
			time.Sleep(2 * time.Millisecond)
			return 2 * time.Millisecond, nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		st := b.State()
		if st.Lifecycle == metadata.Active && infCalls.Load() >= 2 && st.InferenceHealthy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ACTIVE and inference-healthy in time: %+v, inference calls %d", st, infCalls.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	got := map[string]ProbeStats{}
	for _, p := range b.Probes() {
		got[p.Probe] = p
		if p.Latency.Count != p.Passed+p.Failed {
			t.Errorf("%s: %d timed runs, %d counted", p.Probe, p.Latency.Count, p.Passed+p.Failed)
		}
	}
	if len(got) != 3 {
		t.Fatalf("probes %v, want liveness, readiness and inference", got)
	}
	if r := got[ProbeReadiness]; r.Failed != 2 || r.Passed+r.Failed != uint64(readyCalls.Load()) {
		t.Errorf("readiness: passed %d failed %d, calls %d", r.Passed, r.Failed, readyCalls.Load())
	}
	if i := got[ProbeInference]; i.Failed != 1 || i.Passed < 1 || i.Passed+i.Failed != uint64(infCalls.Load()) {
		t.Errorf("inference: passed %d failed %d, calls %d", i.Passed, i.Failed, infCalls.Load())
	}
	if i := got[ProbeInference]; i.Latency.Sum < 0.002*float64(i.Passed) {
		t.Errorf("inference durations sum %.4fs, below the %d passing runs of 2 ms", i.Latency.Sum, i.Passed)
	}
	if l := got[ProbeLiveness]; l.Failed != 0 || l.Passed < 3 {
		t.Errorf("liveness: passed %d failed %d", l.Passed, l.Failed)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.calls[0] != "register" || reg.calls[len(reg.calls)-1] != "deregister" {
		t.Errorf("registry calls %v", reg.calls)
	}
	if b.State().Lifecycle != metadata.Stopped {
		t.Errorf("ended %s", b.State().Lifecycle)
	}
}

// Probes lists only the probes that are configured.
func TestProbesOnlyConfigured(t *testing.T) {
	b, err := New(Config{Service: "svc", IP: "127.0.0.1", Port: 8000}, &recorder{},
		WithReadiness(CheckFunc(func(context.Context) error { return nil })))
	if err != nil {
		t.Fatal(err)
	}
	if ps := b.Probes(); len(ps) != 1 || ps[0].Probe != ProbeReadiness || ps[0].Latency.Count != 0 {
		t.Fatalf("probes %+v", ps)
	}
}
