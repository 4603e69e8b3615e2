//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/balancer"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/warmup"
)

// backend is a fake inference server whose health layers the test flips.
type backend struct {
	live, ready, inferOK atomic.Bool
	minMS, maxMS         int
	srv                  *http.Server
	port                 int
	br                   *bridge.Bridge
	served, notReady     atomic.Int64
	draining             atomic.Int64
}

func startBackend(t *testing.T, minMS, maxMS int) *backend {
	t.Helper()
	be := &backend{minMS: minMS, maxMS: maxMS}
	be.live.Store(true)
	be.ready.Store(true)
	be.inferOK.Store(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	be.port = ln.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	mux.HandleFunc("/live", func(w http.ResponseWriter, _ *http.Request) {
		if !be.live.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !be.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/infer", func(w http.ResponseWriter, r *http.Request) {
		if be.br != nil && r.Header.Get("X-Probe") == "" {
			st := be.br.State()
			switch {
			case st.Lifecycle == metadata.Draining:
				be.draining.Add(1)
			case st.Lifecycle != metadata.Active || st.Warm != metadata.Ready:
				be.notReady.Add(1)
			}
		}
		if !be.inferOK.Load() {
			http.Error(w, "CUDA error: out of memory", http.StatusInternalServerError)
			return
		}
		d := be.minMS
		if be.maxMS > be.minMS {
			d += rand.IntN(be.maxMS - be.minMS)
		}
		time.Sleep(time.Duration(d) * time.Millisecond)
		be.served.Add(1)
		io.WriteString(w, `{"choices":[{"text":"ok"}]}`)
	})
	be.srv = &http.Server{Handler: mux}
	go be.srv.Serve(ln)
	t.Cleanup(func() { be.srv.Close() })
	return be
}

func (be *backend) url(p string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", be.port, p) }

// attach builds and starts a bridge for be; Run's error arrives on the
// returned channel.
func attach(t *testing.T, s nacostest.Server, svc string, be *backend, cycle time.Duration) (*bridge.Bridge, <-chan error) {
	t.Helper()
	nc := nacostest.Client(t, s)
	probe := bridge.InferenceCheck{URL: be.url("/infer"), Body: []byte(`{}`), MaxLatency: 2 * time.Second}
	probeFn := func(ctx context.Context) (time.Duration, error) {
		p := probe
		p.Client = &http.Client{Transport: probeHeader{}}
		return p.Probe(ctx)
	}
	br, err := bridge.New(bridge.Config{
		Service: svc, IP: "127.0.0.1", Port: be.port, Cycle: cycle, InferenceEvery: 1, LivenessFailures: 2,
		ProbeTimeout: time.Second, PropagationDelay: 1500 * time.Millisecond, DrainTimeout: 5 * time.Second,
		Static:             bridge.Static{Models: []string{"m"}, Tasks: []string{"generation"}, MaxConcurrent: 16},
		Warmup:             warmup.Config{Rounds: 3, RoundTimeout: 2 * time.Second, Backoff: 200 * time.Millisecond, MaxBackoff: time.Second},
		DisableEnabledFlag: s.Kind == "rnacos", // r-nacos cannot re-enable over gRPC
	}, nc,
		bridge.WithLogger(zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)),
		bridge.WithConfig(nc),
		bridge.WithLiveness(bridge.HTTPCheck{URL: be.url("/live")}),
		bridge.WithReadiness(bridge.HTTPCheck{URL: be.url("/ready")}),
		bridge.WithInferenceProbe(probeFn),
		bridge.WithWarmup(func(ctx context.Context, _ int) error { _, err := probeFn(ctx); return err }),
	)
	if err != nil {
		t.Fatal(err)
	}
	be.br = br
	done := make(chan error, 1)
	go func() { done <- br.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = br.Shutdown(ctx)
	})
	return br, done
}

type probeHeader struct{}

func (probeHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Probe", "1")
	return http.DefaultTransport.RoundTrip(r)
}

// routable samples the balancer and reports whether port gets picks.
func routable(bl *balancer.Balancer, port int) bool { return routableFor(bl, "m", port) }

// routableFor samples picks for model and reports whether port gets one.
func routableFor(bl *balancer.Balancer, model string, port int) bool {
	for i := 0; i < 20; i++ {
		e, done, err := bl.Pick(context.Background(), balancer.Request{Model: model})
		if err != nil {
			continue
		}
		done.Report(balancer.Result{Latency: time.Millisecond})
		if e.Port == port {
			return true
		}
	}
	return false
}

// watchService is a round-robin balancer, without slow start, fed by a real
// subscription to svc: every sample of picks covers every routable instance.
func watchService(t *testing.T, s nacostest.Server, svc string) *balancer.Watched {
	t.Helper()
	bl, err := balancer.FromNacos(nacostest.Client(t, s), svc, "", balancer.Options{Policy: balancer.PolicyRoundRobin, SlowStart: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bl.Close)
	return bl
}

// startProcess runs bin as a real process; the test kills it at the end.
func startProcess(t *testing.T, bin string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir()), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

func eventually(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v", what, within)
	return 0
}

// TestHealthLayers flips each health layer of a backend and watches a
// balancer fed by Nacos follow.
func TestHealthLayers(t *testing.T) {
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		svc := "ai-health-" + s.Kind
		be := startBackend(t, 5, 10)
		be.ready.Store(false)
		bl, err := balancer.FromNacos(nacostest.Client(t, s), svc, "", balancer.Options{Policy: balancer.PolicyRoundRobin, SlowStart: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer bl.Close()
		const cycle = 200 * time.Millisecond
		start := time.Now()
		var report []string
		br, done := attach(t, s, svc, be, cycle)
		// REGISTERED means Nacos enabled=false: Java Nacos then leaves the
		// instance out of pushes altogether, which protects naive clients;
		// r-nacos (flag not used) pushes it with lifecycle REGISTERED.
		time.Sleep(1500 * time.Millisecond)
		if routable(bl.Balancer, be.port) {
			t.Fatal("a cold, not-ready instance is routable")
		}
		visible := len(bl.Endpoints()) == 1
		if visible && bl.Endpoints()[0].Enabled && s.Kind != "rnacos" {
			t.Fatal("REGISTERED instance has Nacos enabled=true")
		}
		report = append(report, fmt.Sprintf("REGISTERED (enabled=%v) instance visible to subscribers: %v", s.Kind == "rnacos", visible))
		if st := br.State(); st.Warm != metadata.Cold {
			t.Fatalf("not ready, yet warm=%s", st.Warm)
		}
		be.ready.Store(true)
		d := eventually(t, "ready -> warm-up -> ACTIVE -> routable", 15*time.Second, func() bool { return routable(bl.Balancer, be.port) })
		report = append(report, fmt.Sprintf("start->routable %v (readiness flipped after %v)", time.Since(start).Round(time.Millisecond), (time.Since(start)-d).Round(time.Millisecond)))
		if e := bl.Endpoints()[0]; !e.Enabled {
			t.Fatal("ACTIVE instance has Nacos enabled=false")
		}

		be.inferOK.Store(false)
		d = eventually(t, "failing inference probe -> unroutable", 10*time.Second, func() bool { return !routable(bl.Balancer, be.port) })
		report = append(report, fmt.Sprintf("inference probe fails -> unroutable %v", d.Round(time.Millisecond)))
		be.inferOK.Store(true)
		d = eventually(t, "passing inference probe -> routable", 10*time.Second, func() bool { return routable(bl.Balancer, be.port) })
		report = append(report, fmt.Sprintf("probe passes -> routable %v", d.Round(time.Millisecond)))

		be.live.Store(false)
		d = eventually(t, "liveness failing -> cold -> unroutable", 10*time.Second, func() bool { return !routable(bl.Balancer, be.port) })
		if st := br.State(); st.Warm != metadata.Cold || st.Lifecycle != metadata.Registered {
			t.Fatalf("after liveness failures: %s/%s", st.Lifecycle, st.Warm)
		}
		report = append(report, fmt.Sprintf("liveness fails -> cold, unroutable %v", d.Round(time.Millisecond)))
		be.live.Store(true)
		d = eventually(t, "live again -> warm-up -> routable", 15*time.Second, func() bool { return routable(bl.Balancer, be.port) })
		report = append(report, fmt.Sprintf("live again -> warmed -> routable %v", d.Round(time.Millisecond)))

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start = time.Now()
		go br.Shutdown(ctx)
		d = eventually(t, "DRAINING -> unroutable", 10*time.Second, func() bool { return !routable(bl.Balancer, be.port) })
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		report = append(report, fmt.Sprintf("shutdown -> unroutable %v, stopped after %v", d.Round(time.Millisecond), time.Since(start).Round(time.Millisecond)))
		eventually(t, "deregistered", 10*time.Second, func() bool { return len(bl.Endpoints()) == 0 })
		var kinds []string
		for _, e := range br.Events() {
			kinds = append(kinds, e.Kind+":"+e.From+"->"+e.To)
		}
		want := []string{"warm:cold->warming", "warm:warming->ready", "lifecycle:REGISTERED->ACTIVE", "warm:ready->cold", "lifecycle:ACTIVE->REGISTERED",
			"warm:cold->warming", "warm:warming->ready", "lifecycle:REGISTERED->ACTIVE", "lifecycle:ACTIVE->DRAINING", "lifecycle:DRAINING->STOPPED"}
		if strings.Join(kinds, ",") != strings.Join(want, ",") {
			t.Fatalf("events:\n got %v\nwant %v", kinds, want)
		}
		t.Logf("%s: %s", s.Kind, strings.Join(report, "; "))
	})
}

// TestRollingRestart: 3 instances behind the balancer under steady load,
// each restarted in turn (drain, leave, start, warm up): no request fails.
func TestRollingRestart(t *testing.T) {
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		svc := "ai-rolling-" + s.Kind
		const cycle = 250 * time.Millisecond
		// make test runs a short version; the full one (README) is
		// ROLLING_RPS=100 ROLLING_MIN_MS=200 ROLLING_MAX_MS=800.
		rps, minMS, maxMS := envInt("ROLLING_RPS", 40), envInt("ROLLING_MIN_MS", 100), envInt("ROLLING_MAX_MS", 300)
		type inst struct {
			be   *backend
			br   *bridge.Bridge
			done <-chan error
		}
		insts := make([]inst, 3)
		for i := range insts {
			be := startBackend(t, minMS, maxMS)
			br, done := attach(t, s, svc, be, cycle)
			insts[i] = inst{be, br, done}
		}
		bl, err := balancer.FromNacos(nacostest.Client(t, s), svc, "", balancer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer bl.Close()
		eventually(t, "3 routable", 20*time.Second, func() bool {
			n := 0
			for _, e := range bl.Endpoints() {
				if e.Meta.Lifecycle == metadata.Active && e.Meta.Warm == metadata.Ready {
					n++
				}
			}
			return n == 3
		})
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &balancer.Transport{
			Balancers: map[string]*balancer.Balancer{svc: bl.Balancer}, Budget: &balancer.RetryBudget{}}}

		var (
			mu       sync.Mutex
			lat      []time.Duration
			failures []string
			phase    atomic.Int32 // 0 steady, 1 restarting
			steady   []time.Duration
		)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second / time.Duration(rps))
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					resp, err := hc.Post("http://"+svc+"/infer", "application/json", strings.NewReader(`{}`))
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							err = errors.New(resp.Status)
						}
					}
					d := time.Since(start)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						failures = append(failures, err.Error())
						return
					}
					if phase.Load() == 0 {
						steady = append(steady, d)
					} else {
						lat = append(lat, d)
					}
				}()
			}
		}()
		time.Sleep(3 * time.Second) // steady state
		phase.Store(1)
		restart := time.Now()
		for i := range insts {
			old := insts[i]
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if err := old.br.Shutdown(ctx); err != nil {
				t.Fatalf("shutdown %d: %v", i, err)
			}
			cancel()
			if err := <-old.done; err != nil {
				t.Fatalf("drain %d: %v", i, err)
			}
			old.be.srv.Close()
			be := startBackend(t, minMS, maxMS)
			br, done := attach(t, s, svc, be, cycle)
			insts[i] = inst{be, br, done}
			eventually(t, fmt.Sprintf("replacement %d routable", i), 20*time.Second, func() bool {
				for _, e := range bl.Endpoints() {
					if e.Port == be.port && e.Meta.Lifecycle == metadata.Active && e.Meta.Warm == metadata.Ready {
						return true
					}
				}
				return false
			})
		}
		took := time.Since(restart)
		time.Sleep(time.Second)
		close(stop)
		wg.Wait()

		var notReady, draining, served int64
		for _, in := range insts {
			notReady += in.be.notReady.Load()
			draining += in.be.draining.Load()
			served += in.be.served.Load()
		}
		p99 := func(l []time.Duration) time.Duration {
			if len(l) == 0 {
				return 0
			}
			c := append([]time.Duration(nil), l...)
			for i := 1; i < len(c); i++ {
				for j := i; j > 0 && c[j] < c[j-1]; j-- {
					c[j], c[j-1] = c[j-1], c[j]
				}
			}
			return c[len(c)*99/100]
		}
		t.Logf("%s: rolling restart of 3 instances took %v at %d req/s: %d requests during restart, %d failed; p99 steady %v, during restart %v; "+
			"requests reaching a cold/warming instance: %d, a DRAINING one (inside the propagation delay, all served): %d",
			s.Kind, took.Round(time.Millisecond), rps, len(lat), len(failures), p99(steady).Round(time.Millisecond), p99(lat).Round(time.Millisecond), notReady, draining)
		if len(failures) > 0 {
			t.Fatalf("%d failed requests, first: %s", len(failures), failures[0])
		}
		if notReady > 0 {
			t.Fatalf("%d requests reached a cold or warming instance", notReady)
		}
	})
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
