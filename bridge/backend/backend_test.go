package backend

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture reads testdata/<name>; see testdata/README.md for where each
// format comes from.
func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type route struct {
	code int
	body string
}

// fakeEngine serves canned answers by "METHOD /path"; a route can be
// replaced while the test runs to break one source at a time.
type fakeEngine struct {
	mu     sync.Mutex
	routes map[string]route
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	rt, ok := f.routes[r.Method+" "+r.URL.Path]
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.WriteHeader(rt.code)
	_, _ = w.Write([]byte(rt.body))
}

func (f *fakeEngine) set(key string, code int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[key] = route{code, body}
}

// start serves routes and returns the server and a client whose idle
// connections are closed at the end of the test (goleak).
func start(t *testing.T, routes map[string]route) (*fakeEngine, *httptest.Server, *http.Client) {
	t.Helper()
	fe := &fakeEngine{routes: routes}
	srv := httptest.NewServer(fe)
	tr := &http.Transport{}
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
	})
	return fe, srv, &http.Client{Transport: tr}
}

func ok(body string) route { return route{http.StatusOK, body} }

// engineCase is one engine against its fixtures, with the values a correct
// adapter must read from them.
type engineCase struct {
	name    string
	cfg     Config // BaseURL filled in by the test
	routes  func(t *testing.T) map[string]route
	health  string // route key of the health check
	models  string // route key of the model list
	metrics string // route key of the metrics; "" when the engine has none

	live, ready    bool
	models0        []string
	queue, running int64
	kv             float64
}

func engineCases() []engineCase {
	return []engineCase{
		{
			name: "vllm v1", cfg: Config{Engine: EngineVLLM},
			routes: func(t *testing.T) map[string]route {
				return map[string]route{
					"GET /health":    ok(""),
					"GET /v1/models": ok(fixture(t, "vllm/models.json")),
					"GET /metrics":   ok(fixture(t, "vllm/metrics.txt")),
				}
			},
			health: "GET /health", models: "GET /v1/models", metrics: "GET /metrics",
			live: true, ready: true, models0: []string{"Qwen/Qwen3-8B", "sql-lora"},
			queue: 1, running: 5, kv: 0.42, // summed over engine ranks; KV is the max
		},
		{
			name: "vllm v0", cfg: Config{Engine: EngineVLLM},
			routes: func(t *testing.T) map[string]route {
				return map[string]route{
					"GET /health":    ok(""),
					"GET /v1/models": ok(fixture(t, "vllm/models.json")),
					"GET /metrics":   ok(fixture(t, "vllm/metrics_v0.txt")),
				}
			},
			health: "GET /health", models: "GET /v1/models", metrics: "GET /metrics",
			live: true, ready: true, models0: []string{"Qwen/Qwen3-8B", "sql-lora"},
			queue: 4, running: 2, kv: 0.8, // gpu_cache_usage_perc, the pre-v1 name
		},
		{
			name: "sglang", cfg: Config{Engine: EngineSGLang},
			routes: func(t *testing.T) map[string]route {
				return map[string]route{
					"GET /health":    ok(""),
					"GET /v1/models": ok(fixture(t, "sglang/models.json")),
					"GET /metrics":   ok(fixture(t, "sglang/metrics.txt")),
				}
			},
			health: "GET /health", models: "GET /v1/models", metrics: "GET /metrics",
			live: true, ready: true, models0: []string{"meta-llama/Llama-3.1-8B-Instruct"},
			queue: 2826, running: 28, kv: 0.28,
		},
		{
			// Metrics on the same test server; the :8002 default is
			// checked in TestURLs.
			name: "triton", cfg: Config{Engine: EngineTriton, MetricsPath: "/metrics"},
			routes: func(t *testing.T) map[string]route {
				return map[string]route{
					"GET /v2/health/ready":      ok(""),
					"POST /v2/repository/index": ok(fixture(t, "triton/index.json")),
					"GET /metrics":              ok(fixture(t, "triton/metrics.txt")),
				}
			},
			health: "GET /v2/health/ready", models: "POST /v2/repository/index", metrics: "GET /metrics",
			live: true, ready: true, models0: []string{"bert", "resnet50"}, // READY only, once each
			queue: 7, running: Unknown, kv: Unknown,
		},
		{
			name: "llamacpp", cfg: Config{Engine: EngineLlamaCpp},
			routes: func(t *testing.T) map[string]route {
				return map[string]route{
					"GET /health":    ok(fixture(t, "llamacpp/health.json")),
					"GET /v1/models": ok(fixture(t, "llamacpp/models.json")),
					"GET /metrics":   ok(fixture(t, "llamacpp/metrics.txt")),
					"GET /slots":     ok(fixture(t, "llamacpp/slots.json")),
				}
			},
			health: "GET /health", models: "GET /v1/models", metrics: "GET /metrics",
			live: true, ready: true, models0: []string{"qwen2.5-7b-instruct-q4_k_m.gguf"},
			queue: 3, running: 2, kv: 0.15,
		},
		{
			name: "llamacpp without kv ratio", cfg: Config{Engine: EngineLlamaCpp},
			routes: func(t *testing.T) map[string]route {
				return map[string]route{
					"GET /health":    ok(fixture(t, "llamacpp/health.json")),
					"GET /v1/models": ok(fixture(t, "llamacpp/models.json")),
					"GET /metrics":   ok(fixture(t, "llamacpp/metrics_nokv.txt")),
				}
			},
			health: "GET /health", models: "GET /v1/models", metrics: "GET /metrics",
			live: true, ready: true, models0: []string{"qwen2.5-7b-instruct-q4_k_m.gguf"},
			queue: 0, running: 1, kv: Unknown,
		},
		{
			name: "openai", cfg: Config{Engine: EngineOpenAI, MetricsPath: "/metrics", QueueMetric: "app_queue_depth", RunningMetric: "app_inflight", KVMetric: "app_kv_fraction"},
			routes: func(t *testing.T) map[string]route {
				return map[string]route{
					"GET /v1/models": ok(fixture(t, "openai/models.json")),
					"GET /metrics":   ok(fixture(t, "openai/metrics.txt")),
				}
			},
			health: "GET /v1/models", models: "GET /v1/models", metrics: "GET /metrics",
			live: true, ready: true, models0: []string{"gpt-4o-mini", "text-embedding-3-small"},
			queue: 7, running: 4, kv: 0.5,
		},
		{
			name: "http", cfg: Config{Engine: EngineHTTP, HealthPath: "/healthz", ModelsPath: "/models", MetricsPath: "/metrics", QueueMetric: "app_queue_depth", RunningMetric: "app_inflight"},
			routes: func(t *testing.T) map[string]route {
				return map[string]route{
					"GET /healthz": ok("ok"),
					"GET /models":  ok(`["embed-small","rerank-base"]`),
					"GET /metrics": ok(fixture(t, "openai/metrics.txt")),
				}
			},
			health: "GET /healthz", models: "GET /models", metrics: "GET /metrics",
			live: true, ready: true, models0: []string{"embed-small", "rerank-base"},
			queue: 7, running: 4, kv: Unknown,
		},
		{
			name: "ollama", cfg: Config{Engine: EngineOllama, InFlight: func() int64 { return 2 }},
			routes: func(t *testing.T) map[string]route {
				return map[string]route{
					"GET /":       ok("Ollama is running"),
					"GET /api/ps": ok(fixture(t, "ollama/ps.json")),
				}
			},
			health: "GET /", models: "GET /api/ps",
			live: true, ready: true, models0: []string{"llama3.2:latest"},
			queue: Unknown, running: 2, kv: Unknown,
		},
	}
}

func newAdapter(t *testing.T, c engineCase) (*fakeEngine, Adapter, *httptest.Server) {
	t.Helper()
	fe, srv, client := start(t, c.routes(t))
	cfg := c.cfg
	cfg.BaseURL = srv.URL
	a, err := New(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	return fe, a, srv
}

func poll(t *testing.T, a Adapter) Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return a.Poll(ctx)
}

func checkLoad(t *testing.T, st Status, queue, running int64, kv float64, age int) {
	t.Helper()
	if st.QueueDepth != queue || st.Running != running || st.KVCacheUsage != kv || st.LoadAge != age {
		t.Errorf("load = queue %d running %d kv %v age %d, want %d %d %v %d",
			st.QueueDepth, st.Running, st.KVCacheUsage, st.LoadAge, queue, running, kv, age)
	}
}

func checkErr(t *testing.T, err error, prefix string, target error) {
	t.Helper()
	if err == nil {
		t.Fatalf("Err = nil, want %q...", prefix)
	}
	if !strings.Contains(err.Error(), prefix) {
		t.Errorf("Err = %q, want it to contain %q", err, prefix)
	}
	if target != nil && !errors.Is(err, target) {
		t.Errorf("Err = %q, want errors.Is %v", err, target)
	}
}

func TestEnginesHappyPath(t *testing.T) {
	for _, c := range engineCases() {
		t.Run(c.name, func(t *testing.T) {
			_, a, _ := newAdapter(t, c)
			if a.Engine() != c.cfg.Engine {
				t.Errorf("Engine() = %q", a.Engine())
			}
			st := poll(t, a)
			if st.Err != nil {
				t.Fatalf("Err = %v", st.Err)
			}
			if st.Live != c.live || st.Ready != c.ready {
				t.Errorf("live/ready = %v/%v, want %v/%v", st.Live, st.Ready, c.live, c.ready)
			}
			if !slices.Equal(st.Models, c.models0) || st.ModelsStale {
				t.Errorf("models = %q stale %v, want %q", st.Models, st.ModelsStale, c.models0)
			}
			checkLoad(t, st, c.queue, c.running, c.kv, 0)
		})
	}
}

// TestEnginesMetricsFailures: garbage, a 500, an exposition without the
// engine's metrics, a truncated exposition — each keeps the last good load
// for StaleAfter polls, then reports Unknown; a good scrape restores it.
func TestEnginesMetricsFailures(t *testing.T) {
	breaks := []struct {
		name   string
		code   int
		body   string
		target error
	}{
		{"garbage", 200, "<html><body>Welcome to nginx!</body></html>\n", ErrMalformed},
		{"bad value", 200, "# TYPE x gauge\nx{a=\"b\"} twelve\n", ErrMalformed},
		{"truncated", 200, "# HELP vllm:num_requests_running Number\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"", ErrMalformed},
		{"other exporter", 200, "# TYPE go_goroutines gauge\ngo_goroutines 12\n", ErrMalformed},
		{"500", 500, "Internal Server Error", nil},
	}
	for _, c := range engineCases() {
		if c.metrics == "" {
			continue
		}
		for _, b := range breaks {
			t.Run(c.name+"/"+b.name, func(t *testing.T) {
				fe, a, _ := newAdapter(t, c)
				good := fe.routes[c.metrics]
				poll(t, a)
				fe.set(c.metrics, b.code, b.body)
				for age := 1; age <= DefaultStaleAfter; age++ {
					st := poll(t, a)
					checkErr(t, st.Err, "metrics: ", b.target)
					if !st.Live || !st.Ready || !slices.Equal(st.Models, c.models0) {
						t.Errorf("poll %d: health or models disturbed by metrics failure: %+v", age, st)
					}
					checkLoad(t, st, c.queue, c.running, c.kv, age)
				}
				st := poll(t, a)
				checkErr(t, st.Err, "metrics: ", b.target)
				checkLoad(t, st, Unknown, Unknown, Unknown, DefaultStaleAfter+1)

				fe.set(c.metrics, good.code, good.body)
				st = poll(t, a)
				if st.Err != nil {
					t.Fatalf("after recovery: %v", st.Err)
				}
				checkLoad(t, st, c.queue, c.running, c.kv, 0)
			})
		}
	}
}

func TestEnginesModelsBroken(t *testing.T) {
	for _, c := range engineCases() {
		if c.models == c.health {
			continue // openai: covered by TestOpenAIModelsAreHealth
		}
		for _, b := range []route{{200, `{"object":"list","data":[{"id":`}, {200, `{"unexpected":true}`}, {500, "oops"}} {
			t.Run(c.name, func(t *testing.T) {
				fe, a, _ := newAdapter(t, c)
				poll(t, a)
				fe.set(c.models, b.code, b.body)
				st := poll(t, a)
				checkErr(t, st.Err, "models: ", nil)
				if !slices.Equal(st.Models, c.models0) || !st.ModelsStale {
					t.Errorf("models = %q stale %v, want last good %q, stale", st.Models, st.ModelsStale, c.models0)
				}
				if !st.Live || st.LoadAge != 0 {
					t.Errorf("models failure disturbed health or load: %+v", st)
				}
			})
		}
	}
}

func TestEnginesHealthDown(t *testing.T) {
	for _, c := range engineCases() {
		t.Run(c.name, func(t *testing.T) {
			fe, a, _ := newAdapter(t, c)
			poll(t, a)
			fe.set(c.health, http.StatusInternalServerError, "engine dead")
			st := poll(t, a)
			if st.Live || st.Ready {
				t.Errorf("live/ready = %v/%v, want false/false", st.Live, st.Ready)
			}
			var se *StatusError
			if !errors.As(st.Err, &se) || se.Code != 500 {
				t.Errorf("Err = %v, want a StatusError 500", st.Err)
			}
			checkErr(t, st.Err, "health: ", nil)
			if !slices.Equal(st.Models, c.models0) || !st.ModelsStale {
				t.Errorf("models = %q stale %v, want last good, stale", st.Models, st.ModelsStale)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	c := engineCases()[0]
	_, a, srv := newAdapter(t, c)
	poll(t, a)
	srv.Close()
	st := poll(t, a)
	if st.Live || st.Ready {
		t.Errorf("live/ready = %v/%v after the server went away", st.Live, st.Ready)
	}
	checkErr(t, st.Err, "health: ", nil)
	// The load is carried like any failed scrape, marked by its age.
	checkLoad(t, st, c.queue, c.running, c.kv, 1)
}

func TestNotReadyIsNotAnError(t *testing.T) {
	cases := []struct {
		engine, key string
		code        int
		body        string
	}{
		{EngineLlamaCpp, "GET /health", 503, "llamacpp/health_loading.json"},
		{EngineVLLM, "GET /health", 503, ""},
		{EngineTriton, "GET /v2/health/ready", 400, ""},
	}
	for _, c := range cases {
		t.Run(c.engine, func(t *testing.T) {
			body := c.body
			if strings.HasSuffix(body, ".json") {
				body = fixture(t, body)
			}
			_, srv, client := start(t, map[string]route{c.key: {c.code, body}})
			a, err := New(Config{Engine: c.engine, BaseURL: srv.URL, ModelsPath: "-", MetricsPath: "-"}, client)
			if err != nil {
				t.Fatal(err)
			}
			st := poll(t, a)
			if !st.Live || st.Ready || st.Err != nil {
				t.Errorf("got live %v ready %v err %v, want live, not ready, no error", st.Live, st.Ready, st.Err)
			}
		})
	}
}

func TestOpenAIModelsAreHealth(t *testing.T) {
	c := engineCases()[6]
	if c.cfg.Engine != EngineOpenAI {
		t.Fatal("case order changed")
	}
	fe, a, _ := newAdapter(t, c)
	poll(t, a)

	fe.set("GET /v1/models", 503, `{"error":"loading"}`)
	st := poll(t, a)
	if !st.Live || st.Ready || st.Err != nil || !st.ModelsStale || !slices.Equal(st.Models, c.models0) {
		t.Errorf("503: %+v, want live, not ready, last good models, no error", st)
	}

	fe.set("GET /v1/models", 200, `[1,2`)
	st = poll(t, a)
	if !st.Live || !st.Ready || !st.ModelsStale {
		t.Errorf("broken JSON: %+v, want ready with stale models", st)
	}
	checkErr(t, st.Err, "models: ", ErrMalformed)
}

func TestLlamaCppSlotsFallback(t *testing.T) {
	for _, c := range []struct {
		slots   string
		running int64
	}{{"llamacpp/slots.json", 2}, {"llamacpp/slots_old.json", 1}} {
		t.Run(c.slots, func(t *testing.T) {
			_, srv, client := start(t, map[string]route{
				"GET /health":    ok(fixture(t, "llamacpp/health.json")),
				"GET /v1/models": ok(fixture(t, "llamacpp/models.json")),
				"GET /metrics":   {501, fixture(t, "llamacpp/metrics_disabled.json")},
				"GET /slots":     ok(fixture(t, c.slots)),
			})
			a, err := New(Config{Engine: EngineLlamaCpp, BaseURL: srv.URL}, client)
			if err != nil {
				t.Fatal(err)
			}
			st := poll(t, a)
			if st.Err != nil {
				t.Fatalf("Err = %v (metrics off is a configuration, not a fault)", st.Err)
			}
			checkLoad(t, st, Unknown, c.running, Unknown, 0)
		})
	}
	t.Run("slots off too", func(t *testing.T) {
		_, srv, client := start(t, map[string]route{
			"GET /health":  ok(fixture(t, "llamacpp/health.json")),
			"GET /metrics": {501, fixture(t, "llamacpp/metrics_disabled.json")},
			"GET /slots":   {501, `{"error":{"code":501,"message":"This server does not support slots endpoint.","type":"not_supported_error"}}`},
		})
		a, _ := New(Config{Engine: EngineLlamaCpp, BaseURL: srv.URL, ModelsPath: "-"}, client)
		st := poll(t, a)
		checkErr(t, st.Err, "metrics: metrics off and slots unreadable", nil)
		checkLoad(t, st, Unknown, Unknown, Unknown, 1)
	})
}

func TestOllamaTags(t *testing.T) {
	_, srv, client := start(t, map[string]route{
		"GET /":         ok("Ollama is running"),
		"GET /api/tags": ok(fixture(t, "ollama/tags.json")),
	})
	a, err := New(Config{Engine: EngineOllama, BaseURL: srv.URL, ModelsPath: "/api/tags"}, client)
	if err != nil {
		t.Fatal(err)
	}
	st := poll(t, a)
	if st.Err != nil || !slices.Equal(st.Models, []string{"llama3.2:latest", "qwen2.5-coder:7b"}) {
		t.Errorf("got %+v", st)
	}
	// No metrics and no InFlight: load unknown, and that is not an error.
	checkLoad(t, st, Unknown, Unknown, Unknown, 0)
}

func TestStaleAfter(t *testing.T) {
	c := engineCases()[0]
	for _, n := range []int{-1, 1, 5} {
		fe, srv, client := start(t, c.routes(t))
		a, err := New(Config{Engine: EngineVLLM, BaseURL: srv.URL, StaleAfter: n}, client)
		if err != nil {
			t.Fatal(err)
		}
		poll(t, a)
		fe.set("GET /metrics", 500, "")
		for age := 1; age <= max(n, 0)+1; age++ {
			st := poll(t, a)
			if age <= n {
				checkLoad(t, st, c.queue, c.running, c.kv, age)
			} else {
				checkLoad(t, st, Unknown, Unknown, Unknown, age)
			}
		}
	}
}

func TestNeverGoodLoadIsUnknown(t *testing.T) {
	_, srv, client := start(t, map[string]route{"GET /health": ok(""), "GET /v1/models": ok(`{"data":[]}`), "GET /metrics": {500, ""}})
	a, _ := New(Config{Engine: EngineVLLM, BaseURL: srv.URL}, client)
	st := poll(t, a)
	checkLoad(t, st, Unknown, Unknown, Unknown, 1)
	if st.Models == nil || len(st.Models) != 0 {
		t.Errorf("models = %#v, want an empty, non-nil list", st.Models)
	}
}

func TestDeadline(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-r.Context().Done()
	}))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	defer srv.Close()
	a, _ := New(Config{Engine: EngineSGLang, BaseURL: srv.URL}, &http.Client{Transport: tr})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	begin := time.Now()
	st := a.Poll(ctx)
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Poll took %v past a 100ms deadline", d)
	}
	if st.Live || !errors.Is(st.Err, context.DeadlineExceeded) {
		t.Errorf("got live %v err %v, want not live, deadline exceeded", st.Live, st.Err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d requests after a dead health check, want 1", n)
	}
}

func TestConcurrentPolls(t *testing.T) {
	c := engineCases()[0]
	fe, a, _ := newAdapter(t, c)
	good := fixture(t, "vllm/metrics.txt")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				if (i+j)%5 == 0 {
					fe.set("GET /metrics", 500, "")
				} else {
					fe.set("GET /metrics", 200, good)
				}
				st := poll(t, a)
				if st.QueueDepth != Unknown && st.QueueDepth != c.queue {
					t.Errorf("queue = %d", st.QueueDepth)
				}
			}
		})
	}
	wg.Wait()
}

func TestModelsNotShared(t *testing.T) {
	_, a, _ := newAdapter(t, engineCases()[0])
	st := poll(t, a)
	st.Models[0] = "mutated"
	if st2 := poll(t, a); st2.Models[0] == "mutated" {
		t.Error("a caller's edit reached the adapter's last good list")
	}
}

func TestNew(t *testing.T) {
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Engine: "tgi", BaseURL: "http://x"}, "valid engines are vllm, sglang, triton, llamacpp, ollama, openai, http"},
		{Config{Engine: "", BaseURL: "http://x"}, "unknown engine"},
		{Config{Engine: EngineVLLM, BaseURL: "localhost:8000"}, "want http(s)://host[:port]"},
		{Config{Engine: EngineVLLM, BaseURL: "ftp://x"}, "want http(s)://host[:port]"},
		{Config{Engine: EngineVLLM, BaseURL: "http://x", MetricsPath: "ftp://y/metrics"}, "metrics: URL"},
		{Config{Engine: EngineHTTP, BaseURL: "http://x"}, "HealthPath is required"},
		{Config{Engine: EngineOpenAI, BaseURL: "http://x", MetricsPath: "/metrics"}, "no QueueMetric"},
	}
	for _, b := range bad {
		_, err := New(b.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("New(%+v) = %v, want %q", b.cfg, err, b.want)
		}
	}
	if _, err := New(Config{Engine: "tgi", BaseURL: "http://x"}, nil); !errors.Is(err, ErrUnknownEngine) {
		t.Errorf("want ErrUnknownEngine, got %v", err)
	}
	for _, e := range Engines {
		cfg := Config{Engine: e, BaseURL: "http://127.0.0.1:8000/"}
		if e == EngineHTTP {
			cfg.HealthPath = "/healthz"
		}
		if _, err := New(cfg, nil); err != nil {
			t.Errorf("New(%s): %v", e, err)
		}
	}
}

func TestURLs(t *testing.T) {
	a, err := New(Config{Engine: EngineTriton, BaseURL: "http://10.0.0.7:8000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ta := a.(*adapter)
	if ta.metricsURL != "http://10.0.0.7:8002/metrics" || ta.healthURL != "http://10.0.0.7:8000/v2/health/ready" {
		t.Errorf("triton URLs: %q %q", ta.metricsURL, ta.healthURL)
	}
	a, _ = New(Config{Engine: EngineVLLM, BaseURL: "https://gw.example/vllm/", HealthPath: "ping?deep=1", MetricsPath: "http://10.0.0.7:9400/metrics", ModelsPath: "-"}, nil)
	va := a.(*adapter)
	if va.healthURL != "https://gw.example/vllm/ping?deep=1" || va.metricsURL != "http://10.0.0.7:9400/metrics" || va.modelsURL != "" {
		t.Errorf("vllm URLs: %q %q %q", va.healthURL, va.metricsURL, va.modelsURL)
	}
}
