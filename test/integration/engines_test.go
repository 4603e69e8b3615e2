//go:build integration

package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/publish"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
)

// fixture reads a recorded engine response from the backend adapters'
// testdata (see bridge/backend/testdata/README.md for where each came from).
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../bridge/backend/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSidecarEngines runs the sidecar binary in front of a backend that
// answers with each engine's recorded responses (the vLLM shape is
// TestSidecar's) and checks, through a real Nacos, that the instance
// becomes routable for the model the engine lists and publishes the load
// the engine reports, and that requests pass through the proxy.
func TestSidecarEngines(t *testing.T) {
	bin := buildBinary(t, "cmd/nacos-ai-bridge")
	const unknown = -1
	engines := []struct {
		engine    string
		extra     string            // more backend fields, inline YAML
		routes    map[string]string // "METHOD /path" -> body
		model     string
		queue, kv int64
	}{
		{"sglang", "", map[string]string{
			"GET /health": "", "GET /v1/models": fixture(t, "sglang/models.json"), "GET /metrics": fixture(t, "sglang/metrics.txt"),
		}, "meta-llama/Llama-3.1-8B-Instruct", 2826, 28},
		{"triton", "metrics-path: /metrics", map[string]string{
			"GET /v2/health/ready": "", "POST /v2/repository/index": fixture(t, "triton/index.json"), "GET /metrics": fixture(t, "triton/metrics.txt"),
		}, "resnet50", 7, unknown},
		{"llamacpp", "", map[string]string{
			"GET /health": fixture(t, "llamacpp/health.json"), "GET /v1/models": fixture(t, "llamacpp/models.json"),
			"GET /metrics": fixture(t, "llamacpp/metrics.txt"), "GET /slots": fixture(t, "llamacpp/slots.json"),
		}, "qwen2.5-7b-instruct-q4_k_m.gguf", 3, 15},
		{"ollama", "", map[string]string{
			"GET /": "Ollama is running", "GET /api/ps": fixture(t, "ollama/ps.json"),
		}, "llama3.2:latest", unknown, unknown},
		{"openai", "metrics-path: /metrics, queue-metric: app_queue_depth, running-metric: app_inflight, kv-metric: app_kv_fraction", map[string]string{
			"GET /v1/models": fixture(t, "openai/models.json"), "GET /metrics": fixture(t, "openai/metrics.txt"),
		}, "gpt-4o-mini", 7, 50},
	}
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		for _, e := range engines {
			t.Run(e.engine, func(t *testing.T) {
				be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && (r.URL.Path == "/probe" || r.URL.Path == "/v1/chat/completions") {
						io.Copy(io.Discard, r.Body)
						w.Header().Set("Content-Type", "application/json")
						io.WriteString(w, `{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
						return
					}
					body, ok := e.routes[r.Method+" "+r.URL.Path]
					if !ok {
						http.NotFound(w, r)
						return
					}
					io.WriteString(w, body)
				}))
				defer be.Close()
				svc := "ai-engine-" + e.engine + "-" + s.Kind
				extra := ""
				if e.extra != "" {
					extra = ", " + e.extra
				}
				sc := startSidecar(t, bin, s, svc, fmt.Sprintf(`backend: {engine: %s, url: %q%s}
health: {cycle: 300ms, inference-every: 1, probe-timeout: 1s, probe: {path: /probe, body: '{"prompt":"ping"}'}}
warmup: {rounds: 2, round-timeout: 1s}
drain: {propagation-delay: 300ms, timeout: 5s}
`, e.engine, be.URL, extra))
				proxyPort := sc.proxyPort
				bl := watchService(t, s, svc)
				d := eventually(t, e.engine+" sidecar routable for "+e.model, 30*time.Second, func() bool {
					return routableFor(bl.Balancer, e.model, proxyPort)
				})
				eps := bl.Endpoints()
				if len(eps) != 1 {
					t.Fatalf("%d endpoints", len(eps))
				}
				m := eps[0].Meta
				// The engine's raw figures, snapped as the publisher snaps
				// them before a write.
				raw := metadata.Instance{}
				if e.queue != unknown {
					raw.QueueDepth = metadata.IntOf(e.queue)
				}
				if e.kv != unknown {
					raw.KVCacheUsage = metadata.IntOf(e.kv)
				}
				want := publish.Quantize(metadata.Instance{}, raw)
				if m.QueueDepth != want.QueueDepth || m.KVCacheUsage != want.KVCacheUsage {
					t.Errorf("published queue %+v kv %+v, want %+v and %+v (engine reported queue %d, kv %d%%; -1 unknown)",
						m.QueueDepth, m.KVCacheUsage, want.QueueDepth, want.KVCacheUsage, e.queue, e.kv)
				}
				if eps[0].MetaErrors != 0 {
					t.Errorf("%d metadata values did not decode", eps[0].MetaErrors)
				}
				resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", proxyPort), "application/json",
					strings.NewReader(`{"model":"`+e.model+`","messages":[{"role":"user","content":"hi"}]}`))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("proxied call: %s", resp.Status)
				}
				t.Logf("%s/%s: start -> routable %v; models %v, queue %+v, inflight %+v, kv %+v",
					s.Kind, e.engine, d.Round(time.Millisecond), m.LoadedModels, m.QueueDepth, m.Inflight, m.KVCacheUsage)
				sc.stop(t)
			})
		}
	})
}
