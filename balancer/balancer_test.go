package balancer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Unix(1764566400, 0)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// inst builds a bridge-published instance; mod edits its metadata.
func inst(port int, now time.Time, mod func(*metadata.Instance)) nacosreg.Instance {
	md := metadata.Instance{Lifecycle: metadata.Active, Warm: metadata.Ready, InferenceHealthy: metadata.True, GPUHealthy: metadata.True,
		LoadedModels: []string{"qwen"}, SupportedTasks: []string{"generation"}, MaxConcurrent: metadata.IntOf(8),
		QueueDepth: metadata.IntOf(0), Inflight: metadata.IntOf(0), LatencyP95: metadata.IntOf(400),
		GPUMemTotal: metadata.IntOf(81920), GPUMemAvailable: metadata.IntOf(40000), GPUModel: "NVIDIA H100 80GB HBM3",
		UpdatedAt: metadata.IntOf(now.Unix())}
	if mod != nil {
		mod(&md)
	}
	return nacosreg.Instance{IP: "10.1.0.1", Port: port, Weight: 1, Enabled: true, Healthy: true, Metadata: md.Encode()}
}

func newTestBalancer(c *clock, opts Options) *Balancer {
	opts.Now = c.Now
	r := rand.New(rand.NewPCG(1, 2))
	var mu sync.Mutex
	opts.Rand = func(n int) int { mu.Lock(); defer mu.Unlock(); return r.IntN(n) }
	return New(opts)
}

func pickPorts(t *testing.T, b *Balancer, req Request, n int) map[int]int {
	t.Helper()
	got := map[int]int{}
	for i := 0; i < n; i++ {
		e, done, err := b.Pick(context.Background(), req)
		if err != nil {
			t.Fatalf("pick %d: %v", i, err)
		}
		got[e.Port]++
		done.Report(Result{Latency: 100 * time.Millisecond})
	}
	return got
}

// pickLoaded picks n times keeping inflight requests open (the oldest is
// reported when the window is full), as concurrent callers would.
func pickLoaded(t *testing.T, b *Balancer, req Request, n, inflight int) map[int]int {
	t.Helper()
	got := map[int]int{}
	var open []Done
	for i := 0; i < n; i++ {
		e, done, err := b.Pick(context.Background(), req)
		if err != nil {
			t.Fatalf("pick %d: %v", i, err)
		}
		got[e.Port]++
		open = append(open, done)
		if len(open) == inflight {
			open[0].Report(Result{Latency: 100 * time.Millisecond})
			open = open[1:]
		}
	}
	for _, d := range open {
		d.Report(Result{Latency: 100 * time.Millisecond})
	}
	return got
}

func TestFilters(t *testing.T) {
	c := &clock{now: t0}
	tests := []struct {
		name   string
		mod    func(*metadata.Instance)
		nacos  func(*nacosreg.Instance)
		req    Request
		reason string // "" = the instance is picked
	}{
		{"ready instance", nil, nil, Request{}, ""},
		{"disabled in Nacos", nil, func(i *nacosreg.Instance) { i.Enabled = false }, Request{}, ReasonNotEnabled},
		{"unhealthy in Nacos", nil, func(i *nacosreg.Instance) { i.Healthy = false }, Request{}, ReasonNotEnabled},
		{"zero weight", nil, func(i *nacosreg.Instance) { i.Weight = 0 }, Request{}, ReasonNotEnabled},
		{"draining", func(m *metadata.Instance) { m.Lifecycle = metadata.Draining }, nil, Request{}, ReasonNotActive},
		{"registered", func(m *metadata.Instance) { m.Lifecycle = metadata.Registered }, nil, Request{}, ReasonNotActive},
		{"cold", func(m *metadata.Instance) { m.Warm = metadata.Cold }, nil, Request{}, ReasonNotWarm},
		{"warming", func(m *metadata.Instance) { m.Warm = metadata.Warming }, nil, Request{}, ReasonNotWarm},
		{"inference unhealthy", func(m *metadata.Instance) { m.InferenceHealthy = metadata.False }, nil, Request{}, ReasonUnhealthy},
		{"gpu unhealthy", func(m *metadata.Instance) { m.GPUHealthy = metadata.False }, nil, Request{}, ReasonUnhealthy},
		{"plain Nacos instance", func(m *metadata.Instance) { *m = metadata.Instance{} }, nil, Request{Model: "anything", Task: "x"}, ""},
		{"task served", nil, nil, Request{Task: "generation"}, ""},
		{"task not served", nil, nil, Request{Task: "embedding"}, ReasonNoTask},
		{"model served", nil, nil, Request{Model: "qwen"}, ""},
		{"model not served", nil, nil, Request{Model: "llama"}, ReasonNoModel},
		{"model maybe in truncated list", func(m *metadata.Instance) { m.LoadedModelsMore = 3 }, nil, Request{Model: "llama"}, ""},
		{"enough VRAM", nil, nil, Request{MinFreeVRAMMiB: 30000}, ""},
		{"not enough VRAM", nil, nil, Request{MinFreeVRAMMiB: 50000}, ReasonConstraints},
		{"VRAM unknown fails a constraint", func(m *metadata.Instance) { m.GPUMemAvailable = metadata.Int{} }, nil, Request{MinFreeVRAMMiB: 1}, ReasonConstraints},
		{"GPU model", nil, nil, Request{GPUModel: "NVIDIA H100 80GB HBM3"}, ""},
		{"wrong GPU model", nil, nil, Request{GPUModel: "NVIDIA L4"}, ReasonConstraints},
		{"locale preference falls back", nil, nil, Request{Locale: "fr_FR"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTestBalancer(c, Options{Service: "svc"})
			in := inst(1, c.Now(), tt.mod)
			if tt.nacos != nil {
				tt.nacos(&in)
			}
			b.Update([]nacosreg.Instance{in})
			e, done, err := b.Pick(context.Background(), tt.req)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("not picked: %v", err)
				}
				done.Report(Result{})
				return
			}
			var ne *NoEndpointError
			if !errors.As(err, &ne) || !errors.Is(err, ErrNoEndpoint) || !strings.HasPrefix(ne.Reason, tt.reason) {
				t.Fatalf("picked %v, err %v; want reason %q", e, err, tt.reason)
			}
		})
	}
}

func TestFailOpenNeverRoutesToDraining(t *testing.T) {
	c := &clock{now: t0}
	b := newTestBalancer(c, Options{FailOpen: true})
	b.Update([]nacosreg.Instance{
		inst(1, c.Now(), func(m *metadata.Instance) { m.InferenceHealthy = metadata.False }),
		inst(2, c.Now(), func(m *metadata.Instance) { m.Lifecycle = metadata.Draining }),
	})
	got := pickPorts(t, b, Request{}, 50)
	if got[2] != 0 || got[1] != 50 {
		t.Fatalf("fail-open picks %v: must relax health, never DRAINING", got)
	}
	b.Update([]nacosreg.Instance{inst(2, c.Now(), func(m *metadata.Instance) { m.Lifecycle = metadata.Draining })})
	if _, _, err := b.Pick(context.Background(), Request{}); !errors.Is(err, ErrNoEndpoint) {
		t.Fatalf("fail-open routed to a draining instance: %v", err)
	}
}

func TestGarbageMetadataDegradesThatPeerOnly(t *testing.T) {
	c := &clock{now: t0}
	b := newTestBalancer(c, Options{})
	bad := nacosreg.Instance{IP: "10.1.0.2", Port: 2, Weight: 1, Enabled: true, Healthy: true,
		Metadata: map[string]string{"lifecycle": "ACTIVE", "warm.status": "ready", "inference.latency.p95": "fast", "queue.depth": "-4", "max.concurrent": "∞"}}
	b.Update([]nacosreg.Instance{inst(1, c.Now(), nil), bad})
	got := pickLoaded(t, b, Request{}, 200, 8)
	if got[1] == 0 || got[2] == 0 {
		t.Fatalf("both must serve: %v", got)
	}
	for _, e := range b.Endpoints() {
		if e.Port == 2 && e.MetaErrors != 3 {
			t.Fatalf("garbage peer: %d metadata errors, want 3", e.MetaErrors)
		}
	}
}

func TestPrefersLessLoadedAndFaster(t *testing.T) {
	c := &clock{now: t0}
	b := newTestBalancer(c, Options{})
	b.Update([]nacosreg.Instance{
		inst(1, c.Now(), nil),
		inst(2, c.Now(), func(m *metadata.Instance) { m.QueueDepth = metadata.IntOf(24) }), // published: saturated
		inst(3, c.Now(), func(m *metadata.Instance) { m.LatencyP95 = metadata.IntOf(2000) }),
	})
	got := pickPorts(t, b, Request{}, 300)
	if got[1] <= got[2] || got[1] <= got[3] {
		t.Fatalf("picks %v: the idle fast instance must get the most", got)
	}
}

func TestStaleSignalsAreNeutral(t *testing.T) {
	c := &clock{now: t0}
	b := newTestBalancer(c, Options{StaleAfter: 90 * time.Second})
	old := t0.Add(-10 * time.Minute)
	b.Update([]nacosreg.Instance{
		inst(1, c.Now(), nil),
		inst(2, old, func(m *metadata.Instance) { m.QueueDepth = metadata.IntOf(1000) }), // stale "saturated"
	})
	got := pickLoaded(t, b, Request{}, 400, 8)
	if got[2] < 100 {
		t.Fatalf("picks %v: stale saturation must be neutral, not avoided", got)
	}
}

func TestSlowStart(t *testing.T) {
	c := &clock{now: t0}
	b := newTestBalancer(c, Options{Policy: PolicyWeightedRandom, SlowStart: 30 * time.Second})
	b.Update([]nacosreg.Instance{inst(1, c.Now(), nil)})
	b.Update([]nacosreg.Instance{inst(1, c.Now(), nil), inst(2, c.Now(), nil)}) // 2 just became ready
	early := pickPorts(t, b, Request{}, 1000)
	c.Add(31 * time.Second)
	late := pickPorts(t, b, Request{}, 1000)
	if early[2] > 200 || late[2] < 400 {
		t.Fatalf("slow start: new instance got %d/1000 at once, %d/1000 after the window", early[2], late[2])
	}
}

func TestBreaker(t *testing.T) {
	c := &clock{now: t0}
	b := newTestBalancer(c, Options{Policy: PolicyRoundRobin, Breaker: BreakerConfig{MinRequests: 10, FailureRatio: 0.5, OpenFor: 5 * time.Second, Probes: 2}})
	b.Update([]nacosreg.Instance{inst(1, c.Now(), nil), inst(2, c.Now(), nil)})
	boom := errors.New("boom")
	fail := func(port int) {
		for i := 0; i < 40; i++ {
			e, done, err := b.Pick(context.Background(), Request{})
			if err != nil {
				return
			}
			if e.Port == port {
				done.Report(Result{Err: boom})
			} else {
				done.Report(Result{Latency: 50 * time.Millisecond})
			}
		}
	}
	fail(2)
	if got := pickPorts(t, b, Request{}, 100); got[2] != 0 {
		t.Fatalf("open breaker still picked: %v", got)
	}
	// After OpenFor, half-open admits probes; successes close it.
	c.Add(6 * time.Second)
	seen2 := 0
	for i := 0; i < 200 && seen2 < 10; i++ {
		e, done, err := b.Pick(context.Background(), Request{})
		if err != nil {
			t.Fatal(err)
		}
		if e.Port == 2 {
			seen2++
		}
		done.Report(Result{Latency: 50 * time.Millisecond})
	}
	if seen2 < 10 {
		t.Fatalf("breaker did not close after successful probes (%d picks of 2)", seen2)
	}
	// Adaptive timeout exists and respects the floor.
	for _, e := range b.Endpoints() {
		if to := e.Timeout(c.Now(), time.Second); to < time.Second {
			t.Fatalf("timeout %v below floor", to)
		}
	}
}

func TestPolicies(t *testing.T) {
	c := &clock{now: t0}
	for _, p := range []string{PolicyAI, PolicyRoundRobin, PolicyWeightedRandom, PolicyLeastRequest, PolicyWLC, PolicyGPUScore} {
		t.Run(p, func(t *testing.T) {
			b := newTestBalancer(c, Options{Policy: p})
			var list []nacosreg.Instance
			for i := 1; i <= 5; i++ {
				list = append(list, inst(i, c.Now(), nil))
			}
			list = append(list, inst(9, c.Now(), func(m *metadata.Instance) { m.Lifecycle = metadata.Draining }))
			b.Update(list)
			// Keep 8 requests in flight, so load-aware policies spread.
			got := pickLoaded(t, b, Request{Model: "qwen"}, 500, 8)
			if got[9] != 0 {
				t.Fatalf("%s routed to a draining instance", p)
			}
			if len(got) < 2 {
				t.Fatalf("%s uses only %v", p, got)
			}
		})
	}
}

func TestRetryBudget(t *testing.T) {
	c := &clock{now: t0}
	rb := &RetryBudget{Ratio: 0.2, MinPerSecond: 0.1, Now: c.Now}
	for i := 0; i < 100; i++ {
		rb.Request()
	}
	ok := 0
	for i := 0; i < 100; i++ {
		if rb.TryRetry() {
			ok++
		}
	}
	if ok != 21 { // 20% of 100 + 0.1/s x 10 s
		t.Fatalf("%d retries allowed, want 21", ok)
	}
}

// TestHammer: 100 goroutines pick and report while snapshots are replaced.
func TestHammer(t *testing.T) {
	b := New(Options{})
	mk := func(n int) []nacosreg.Instance {
		var l []nacosreg.Instance
		for i := 0; i < n; i++ {
			l = append(l, inst(1000+i, time.Now(), nil))
		}
		return l
	}
	b.Update(mk(50))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var picks sync.Map
	for g := 0; g < 100; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for {
				select {
				case <-stop:
					picks.Store(n, true)
					return
				default:
				}
				e, done, err := b.Pick(context.Background(), Request{Model: "qwen"})
				if err != nil {
					continue
				}
				_ = e.Addr
				done.Report(Result{Latency: time.Millisecond})
				n++
			}
		}()
	}
	for i := 0; i < 200; i++ {
		b.Update(mk(20 + i%40))
	}
	close(stop)
	wg.Wait()
	for _, e := range b.Endpoints() {
		if e.InFlight() != 0 {
			t.Fatalf("%s: in-flight %d after every request reported", e.Addr, e.InFlight())
		}
	}
}

func FuzzBalancerMetadata(f *testing.F) {
	f.Add("ACTIVE", "ready", "400", "3", "8", "qwen,+2", "1764566400")
	f.Add("", "", "-1", "NaN", "0", ",,,", "x")
	f.Fuzz(func(t *testing.T, lc, warm, p95, queue, maxc, models, updated string) {
		b := New(Options{Now: func() time.Time { return t0 }})
		peer := nacosreg.Instance{IP: "10.0.0.9", Port: 9, Weight: 1, Enabled: true, Healthy: true, Metadata: map[string]string{
			"lifecycle": lc, "warm.status": warm, "inference.latency.p95": p95, "queue.depth": queue,
			"max.concurrent": maxc, "loaded.models": models, "updated.at": updated}}
		b.Update([]nacosreg.Instance{inst(1, t0, nil), peer})
		for i := 0; i < 20; i++ {
			e, done, err := b.Pick(context.Background(), Request{Model: "qwen"})
			if err != nil {
				t.Fatalf("a good instance is there; garbage from a peer must not stop picks: %v", err)
			}
			_ = e
			done.Report(Result{})
		}
	})
}

func benchList(n int) []nacosreg.Instance {
	l := make([]nacosreg.Instance, n)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range l {
		l[i] = inst(10000+i, time.Now(), func(m *metadata.Instance) {
			m.QueueDepth = metadata.IntOf(int64(r.IntN(10)))
			m.LatencyP95 = metadata.IntOf(int64(200 + r.IntN(800)))
			m.LoadedModels = []string{"qwen", "m" + strconv.Itoa(i%7)}
		})
		l[i].IP = fmt.Sprintf("10.2.%d.%d", i/250, i%250)
	}
	return l
}

// benchPick picks from 1000 endpoints on every core, reporting each pick.
func benchPick(b *testing.B, policy string) {
	bl := New(Options{Policy: policy})
	bl.Update(benchList(1000))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, done, err := bl.Pick(context.Background(), Request{Model: "qwen"})
			if err != nil {
				b.Fatal(err)
			}
			done.Report(Result{Latency: time.Millisecond})
		}
	})
}

func BenchmarkPick1000(b *testing.B) { benchPick(b, PolicyAI) }

// BenchmarkPick1000RoundRobin is the baseline policy in the same run.
func BenchmarkPick1000RoundRobin(b *testing.B) { benchPick(b, PolicyRoundRobin) }

// BenchmarkRebuild1000 is the common push: the whole list, one instance
// changed.
func BenchmarkRebuild1000(b *testing.B) {
	bl := New(Options{})
	l := benchList(1000)
	bl.Update(l)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		md := maps.Clone(l[i%1000].Metadata)
		md["queue.depth"] = strconv.Itoa(i % 9)
		l[i%1000].Metadata = md
		bl.Update(l)
	}
}

// BenchmarkRebuild1000AllChanged is the worst case: every instance changed.
func BenchmarkRebuild1000AllChanged(b *testing.B) {
	bl := New(Options{})
	lists := [2][]nacosreg.Instance{benchList(1000), benchList(1000)}
	for i := range lists[1] {
		lists[1][i].Metadata["queue.depth"] = "7"
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		bl.Update(lists[i%2])
	}
}

func TestExclude(t *testing.T) {
	c := &clock{now: t0}
	b := newTestBalancer(c, Options{})
	b.Update([]nacosreg.Instance{inst(1, c.Now(), nil), inst(2, c.Now(), nil)})
	for i := 0; i < 50; i++ {
		e, done, err := b.Pick(context.Background(), Request{Exclude: []string{"10.1.0.1:1"}})
		if err != nil || e.Port != 2 {
			t.Fatalf("excluded endpoint picked: %v %v", e, err)
		}
		done.Report(Result{})
	}
	if _, _, err := b.Pick(context.Background(), Request{Exclude: []string{"10.1.0.1:1", "10.1.0.1:2"}}); !errors.Is(err, ErrNoEndpoint) {
		t.Fatalf("all excluded: %v", err)
	}
}
