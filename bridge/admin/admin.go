// Package admin serves a bridge's admin endpoints, meant for a listener on
// 127.0.0.1 (the sidecar's default): /healthz (the bridge process answers),
// /readyz (ACTIVE and ready), /metrics (Prometheus text format) and
// /v1/state (JSON: lifecycle, warm, last metadata written, config revision,
// last rejection, recent events).
//
// The handler only reads the bridge's snapshots; it is safe for concurrent
// use and holds no goroutines.
package admin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
)

// Source is what the endpoints read (*bridge.Bridge satisfies it).
type Source interface {
	State() bridge.State
	Events() []bridge.Event
}

// Extra adds metric lines (e.g. the proxy's) in Prometheus text format.
type Extra func(w io.Writer)

// Handler returns the admin mux.
func Handler(src Source, extra ...Extra) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		st := src.State()
		if st.Lifecycle != metadata.Active || st.Warm != metadata.Ready || !st.InferenceHealthy {
			http.Error(w, fmt.Sprintf("not ready: lifecycle=%s warm=%s inference_healthy=%v", st.Lifecycle, st.Warm, st.InferenceHealthy), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	mux.HandleFunc("GET /v1/state", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			bridge.State
			Events []bridge.Event `json:"events"`
		}{src.State(), src.Events()})
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		Write(w, src.State())
		for _, e := range extra {
			e(w)
		}
	})
	return mux
}

// Write renders the bridge's metrics in Prometheus text format.
func Write(w io.Writer, st bridge.State) {
	oneHot(w, "nacos_ai_bridge_lifecycle", "Lifecycle state (1 for the current one).", "state",
		string(st.Lifecycle), []string{"REGISTERED", "ACTIVE", "DRAINING", "STOPPED"})
	oneHot(w, "nacos_ai_bridge_warm", "Warm-up status (1 for the current one).", "status",
		string(st.Warm), []string{"cold", "warming", "ready"})
	gauge(w, "nacos_ai_bridge_inference_healthy", "1 while the inference probe passes.", b2f(st.InferenceHealthy))
	gauge(w, "nacos_ai_bridge_in_flight", "Requests in flight through the bridge.", float64(st.InFlight))
	counter(w, "nacos_ai_bridge_metadata_writes_total", "Metadata writes to Nacos.", float64(st.Writes.Writes))
	counter(w, "nacos_ai_bridge_metadata_skips_total", "Health cycles with nothing worth a write.", float64(st.Writes.Skips))
	counter(w, "nacos_ai_bridge_metadata_write_failures_total", "Failed metadata writes (retried next cycle).", float64(st.Writes.Failures))
	counter(w, "nacos_ai_bridge_config_applies_total", "Inference config revisions applied.", float64(st.Config.Applies))
	counter(w, "nacos_ai_bridge_config_rejections_total", "Inference config documents rejected.", float64(st.Config.Rejections))
	fmt.Fprintf(w, "# HELP nacos_ai_bridge_config_info The applied inference config revision.\n# TYPE nacos_ai_bridge_config_info gauge\nnacos_ai_bridge_config_info{rev=%q,state=%q} 1\n", st.ConfigRev, st.Config.State)
	for _, k := range []struct{ key, name, help string }{
		{metadata.KeyLatencyP50, "nacos_ai_bridge_inference_latency_p50_ms", "Published inference latency p50 (ms)."},
		{metadata.KeyLatencyP95, "nacos_ai_bridge_inference_latency_p95_ms", "Published inference latency p95 (ms)."},
	} {
		if v, ok := st.Metadata[k.key]; ok {
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", k.name, k.help, k.name, k.name, v)
		}
	}
}

func oneHot(w io.Writer, name, help, label, cur string, all []string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	vals := append([]string(nil), all...)
	sort.Strings(vals)
	for _, v := range vals {
		x := 0
		if strings.EqualFold(v, cur) {
			x = 1
		}
		fmt.Fprintf(w, "%s{%s=%q} %d\n", name, label, v, x)
	}
}

func gauge(w io.Writer, name, help string, v float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %g\n", name, help, name, name, v)
}

func counter(w io.Writer, name, help string, v float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %g\n", name, help, name, name, v)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
