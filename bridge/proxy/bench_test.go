package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/shutdown"
)

// The benchmarks compare calling a backend directly with calling it through
// the proxy, on loopback, in the same process and run, so the ratio is what
// matters, not the absolute figures. The backend answers 1 KiB.

var (
	kib      = []byte(strings.Repeat("x", 1023) + "\n")
	chatBody = `{"model":"m","messages":[{"role":"system","content":"You are a helpful assistant."},` +
		`{"role":"user","content":"Summarise the plot of Hamlet in two sentences."}],"stream":false}`
)

// benchEnv is a 1 KiB backend, the proxy in front of it (with a Tracker and
// a config, as the sidecar runs it), and a client with a pool big enough
// for the parallel benchmarks.
type benchEnv struct {
	backend, proxied *httptest.Server
	proxy            *Proxy
	client           *http.Client
	delay            time.Duration // backend wait per request; set before use
	burn             func()        // backend CPU work per request; set before use
}

func newBenchEnv(tb testing.TB, sse bool) *benchEnv {
	tb.Helper()
	e := &benchEnv{}
	var h http.HandlerFunc = func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if e.delay > 0 {
			time.Sleep(e.delay)
		}
		if e.burn != nil {
			e.burn()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1024")
		_, _ = w.Write(kib)
	}
	if sse {
		h = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"token\":\"one\"}\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond) // next token
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
		}
	}
	e.backend = httptest.NewServer(h)
	u, _ := url.Parse(e.backend.URL)
	cfg := testConfig()
	p, err := New(Options{
		Backend: u,
		Config:  func() *inferencecfg.Config { return cfg },
		Tracker: shutdown.NewTracker(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	e.proxy = p
	e.proxied = httptest.NewServer(p)
	e.client = &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, DisableCompression: true}}
	tb.Cleanup(func() {
		e.client.CloseIdleConnections()
		e.proxied.Close()
		p.CloseIdleConnections()
		e.backend.Close()
	})
	return e
}

// call makes one request and reads the whole response.
func (e *benchEnv) call(base string, post bool) error {
	var req *http.Request
	if post {
		req, _ = http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req, _ = http.NewRequest("GET", base+"/v1/models", nil)
	}
	res, err := e.client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return err
}

func benchCalls(b *testing.B, proxied bool) {
	for _, post := range []bool{false, true} {
		name := "get"
		if post {
			name = "post-chat"
		}
		b.Run(name, func(b *testing.B) {
			e := newBenchEnv(b, false)
			base := e.backend.URL
			if proxied {
				base = e.proxied.URL
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(kib)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := e.call(base, post); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkDirect is the baseline: the client calls the backend.
func BenchmarkDirect(b *testing.B) { benchCalls(b, false) }

// BenchmarkProxied is the same load through the proxy; "post-chat" includes
// the body rewrite (temperature, top_p, max_tokens filled).
func BenchmarkProxied(b *testing.B) { benchCalls(b, true) }

// BenchmarkRewriteBody is the body rewrite alone, on a small chat request.
func BenchmarkRewriteBody(b *testing.B) {
	cfg := testConfig()
	in := []byte(chatBody)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		rewriteBody(in, cfg)
	}
}

// TestOverheadReport prints the figures behind the package's performance
// claims: added latency per request, throughput ratio and SSE time to first
// byte, each against the direct baseline of the same run. It is a
// measurement, not a check, so it runs only when asked and without -race:
//
//	PROXY_REPORT=1 go test -run TestOverheadReport -v ./bridge/proxy
func TestOverheadReport(t *testing.T) {
	if os.Getenv("PROXY_REPORT") == "" {
		t.Skip("set PROXY_REPORT=1 to measure")
	}
	const n = 5000

	e := newBenchEnv(t, false)
	for _, post := range []bool{false, true} {
		// Interleave direct and proxied calls so drift (frequency scaling,
		// GC) hits both alike.
		var direct, proxied []time.Duration
		for i := 0; i < n+200; i++ {
			for _, base := range []string{e.backend.URL, e.proxied.URL} {
				start := time.Now()
				if err := e.call(base, post); err != nil {
					t.Fatal(err)
				}
				if i >= 200 { // warm-up: connections, pools
					d := time.Since(start)
					if base == e.backend.URL {
						direct = append(direct, d)
					} else {
						proxied = append(proxied, d)
					}
				}
			}
		}
		d50, d99 := pct(direct, 0.5), pct(direct, 0.99)
		p50, p99 := pct(proxied, 0.5), pct(proxied, 0.99)
		t.Logf("sequential %s x%d: direct p50 %v p99 %v | proxied p50 %v p99 %v | added p50 %v (x%.2f)",
			kind(post), n, d50, d99, p50, p99, p50-d50, float64(p50)/float64(d50))
	}

	// Client, proxy and backend share this machine's cores, so with a
	// backend that does no work the proxy, which is one more HTTP server
	// and one more HTTP client per request, is bounded near half of direct.
	// The CPU per request says what the proxy itself costs (proxied minus
	// direct), which is the figure that carries over to other backends.
	for _, conc := range []int{1, 8, 64} {
		for _, post := range []bool{false, true} {
			d, p, cpu := throughput(t, e, [2]string{e.backend.URL, e.proxied.URL}, conc, post)
			t.Logf("throughput %s, zero-work backend, %d concurrent: direct %.0f req/s, proxied %.0f req/s, ratio %.2f; CPU/request direct %v proxied %v, proxy's share %v",
				kind(post), conc, d, p, p/d, cpu[0].Round(time.Microsecond), cpu[1].Round(time.Microsecond), (cpu[1] - cpu[0]).Round(time.Microsecond))
		}
	}
	// Backends that do work, as every inference server does: one that
	// waits 2 ms per request (the GPU's share: the CPU is free meanwhile),
	// and one that spends 1 ms of CPU per request (the HTTP front of a
	// Python server). The proxy's cost is then a share of the work.
	slow := newBenchEnv(t, false)
	slow.delay = 2 * time.Millisecond
	busy := newBenchEnv(t, false)
	busy.burn = burnCPU(t, time.Millisecond)
	for _, c := range []struct {
		e    *benchEnv
		what string
	}{{slow, "backend waits 2 ms"}, {busy, "backend spends 1 ms CPU"}} {
		for _, conc := range []int{8, 64} {
			d, p, cpu := throughput(t, c.e, [2]string{c.e.backend.URL, c.e.proxied.URL}, conc, true)
			t.Logf("throughput POST chat (rewritten), %s, %d concurrent: direct %.0f req/s, proxied %.0f req/s, ratio %.2f; CPU/request direct %v proxied %v",
				c.what, conc, d, p, p/d, cpu[0].Round(time.Microsecond), cpu[1].Round(time.Microsecond))
		}
	}

	s := newBenchEnv(t, true)
	var direct, proxied []time.Duration
	for i := 0; i < 520; i++ {
		for _, base := range []string{s.backend.URL, s.proxied.URL} {
			d := ttfb(t, s.client, base)
			if i >= 20 {
				if base == s.backend.URL {
					direct = append(direct, d)
				} else {
					proxied = append(proxied, d)
				}
			}
		}
	}
	t.Logf("SSE time to first event x%d: direct p50 %v p90 %v | proxied p50 %v p90 %v | added p50 %v",
		len(direct), pct(direct, 0.5), pct(direct, 0.9), pct(proxied, 0.5), pct(proxied, 0.9), pct(proxied, 0.5)-pct(direct, 0.5))
	t.Logf("proxy stats: %+v", e.proxy.Stats())
}

func kind(post bool) string {
	if post {
		return "POST chat (rewritten)"
	}
	return "GET"
}

func pct(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// throughput runs conc closed-loop callers in alternating 250 ms windows,
// direct then proxied, four of each, and returns req/s for both, with the
// process CPU time spent per request on each side (client, backend and, on
// the proxied side, the proxy: all in this process). The alternation keeps a
// noisy machine from favouring one side.
func throughput(t *testing.T, e *benchEnv, urls [2]string, conc int, post bool) (direct, proxied float64, cpu [2]time.Duration) {
	t.Helper()
	const window, rounds = 250 * time.Millisecond, 4
	var n [2]int64
	var spent [2]time.Duration
	for range rounds {
		for side, base := range urls {
			var count atomic.Int64
			var wg sync.WaitGroup
			cpu0 := processCPU(t)
			stop := time.Now().Add(window)
			for range conc {
				wg.Go(func() {
					for time.Now().Before(stop) {
						if err := e.call(base, post); err != nil {
							t.Error(err)
							return
						}
						count.Add(1)
					}
				})
			}
			wg.Wait()
			spent[side] += processCPU(t) - cpu0
			n[side] += count.Load()
		}
	}
	secs := (window * rounds).Seconds()
	for i := range cpu {
		cpu[i] = spent[i] / time.Duration(max(n[i], 1))
	}
	return float64(n[0]) / secs, float64(n[1]) / secs, cpu
}

// processCPU is the user+system CPU time this process has used.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// burnCPU does a fixed amount of arithmetic, iterations calibrated once to
// take about d of CPU, standing in for the per-request CPU an inference
// server's HTTP front spends (parsing, tokenising, scheduling,
// detokenising). Fixed work, not a spin for a wall time: a spin would do
// less work whenever the proxy took the core, flattering the proxy.
func burnCPU(t *testing.T, d time.Duration) func() {
	const probe = 20_000_000
	cpu0 := processCPU(t)
	spin(probe)
	perIter := float64(processCPU(t)-cpu0) / probe
	n := int(float64(d) / max(perIter, 1e-3))
	return func() { spin(n) }
}

var sink atomic.Uint64

func spin(n int) {
	x := uint64(1)
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink.Add(x)
}

// ttfb returns the time from sending a streaming request to reading its
// first event, then drains the rest.
func ttfb(t *testing.T, c *http.Client, base string) time.Duration {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	_, _ = io.Copy(io.Discard, br)
	return d
}

// TestPinnedOverheadReport measures throughput with the proxy on a core of
// its own, as a sidecar given its own CPU share runs: the backend and the
// callers share CPU 0, the proxy has CPU 1, each a separate process pinned
// with taskset. Direct and proxied windows alternate as in
// TestOverheadReport. A measurement, not a check:
//
//	PROXY_REPORT=1 go test -run TestPinnedOverheadReport -v ./bridge/proxy
func TestPinnedOverheadReport(t *testing.T) {
	if os.Getenv("PROXY_REPORT") == "" {
		t.Skip("set PROXY_REPORT=1 to measure")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("needs taskset")
	}
	backend := startHelper(t, "0", "backend")
	proxied := startHelper(t, "1", "proxy", "HELPER_BACKEND="+backend)
	out, err := helperCmd(t, "0", "client", "HELPER_DIRECT="+backend, "HELPER_PROXIED="+proxied).CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(line, "RESULT "); ok {
			t.Log(r)
		}
	}
}

// helperCmd is this test binary, pinned to cpu, running TestHelperProcess
// as role.
func helperCmd(t *testing.T, cpu, role string, env ...string) *exec.Cmd {
	cmd := exec.Command("taskset", "-c", cpu, os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(append(os.Environ(), "PROXY_HELPER="+role), env...)
	return cmd
}

// startHelper starts a serving helper and returns the URL it prints; the
// process ends with the test (its stdin closes, and it is killed).
func startHelper(t *testing.T, cpu, role string, env ...string) string {
	t.Helper()
	cmd := helperCmd(t, cpu, role, env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return u
		}
	}
	t.Fatalf("%s helper printed no URL", role)
	return ""
}

// TestHelperProcess is a role of TestPinnedOverheadReport, run in a child
// process; it skips when not asked for one.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv("PROXY_HELPER")
	serve := func(h http.Handler) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h}
		go func() { _ = srv.Serve(ln) }()
		fmt.Printf("URL http://%s\n", ln.Addr())
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes
		srv.Close()
	}
	switch role {
	case "":
		t.Skip("a helper for TestPinnedOverheadReport")
	case "backend":
		serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1024")
			_, _ = w.Write(kib)
		}))
	case "proxy":
		u, _ := url.Parse(os.Getenv("HELPER_BACKEND"))
		cfg := testConfig()
		p, err := New(Options{Backend: u, Config: func() *inferencecfg.Config { return cfg }, Tracker: shutdown.NewTracker()})
		if err != nil {
			t.Fatal(err)
		}
		serve(p)
		p.CloseIdleConnections()
	case "client":
		e := &benchEnv{client: &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, DisableCompression: true}}}
		urls := [2]string{os.Getenv("HELPER_DIRECT"), os.Getenv("HELPER_PROXIED")}
		for _, conc := range []int{8, 64} {
			for _, post := range []bool{false, true} {
				d, p, _ := throughput(t, e, urls, conc, post)
				fmt.Printf("RESULT throughput %s, zero-work backend, callers and backend on CPU 0, proxy alone on CPU 1, %d concurrent: direct %.0f req/s, proxied %.0f req/s, ratio %.2f\n",
					kind(post), conc, d, p, p/d)
			}
		}
		e.client.CloseIdleConnections()
	}
}

// BenchmarkMetricsRead is what one /metrics scrape reads from a proxy with
// a full latency window: the counters alone (what WriteMetrics reads)
// against Stats (the baseline, which also sorts the window).
func BenchmarkMetricsRead(b *testing.B) {
	u, _ := url.Parse("http://127.0.0.1:1")
	p, err := New(Options{Backend: u})
	if err != nil {
		b.Fatal(err)
	}
	for i := range LatencyWindow {
		p.latency.record(time.Duration(i*7919%LatencyWindow) * time.Millisecond)
	}
	b.Run("baseline-stats", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Stats()
		}
	})
	b.Run("counters", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.counters()
		}
	})
}
