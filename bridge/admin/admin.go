// Package admin serves a bridge's admin endpoints, meant for a listener on
// 127.0.0.1 (the sidecar's default): /healthz (the bridge process answers),
// /readyz (ACTIVE and ready), /metrics (Prometheus text format: lifecycle,
// warm status, metadata writes and skips, config applies and rejections,
// probe results and duration histograms, plus any Extra such as the proxy's
// in-flight gauge and latency histograms) and
// /v1/state (JSON: lifecycle, warm, last metadata written, config revision,
// last rejection, recent events).
//
// The handler only reads the bridge's snapshots; it is safe for concurrent
// use and holds no goroutines.
package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/metrics"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
)

// Source is what the endpoints read (*bridge.Bridge satisfies it).
type Source interface {
	State() bridge.State
	Events() []bridge.Event
	Probes() []bridge.ProbeStats
}

// Extra adds metric families (e.g. the proxy's WriteMetrics) in Prometheus
// text format.
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
		// Rendered into a buffer first: a slow scraper then holds no
		// snapshot open, and a write error cannot leave half a family.
		var buf bytes.Buffer
		Write(&buf, src.State())
		WriteProbes(&buf, src.Probes())
		for _, e := range extra {
			e(&buf)
		}
		_, _ = w.Write(buf.Bytes())
	})
	return mux
}

// Write renders the bridge's state metrics in Prometheus text format.
func Write(w io.Writer, st bridge.State) {
	oneHot(w, "nacos_ai_bridge_lifecycle", "Lifecycle state (1 for the current one).", "state",
		string(st.Lifecycle), []string{"REGISTERED", "ACTIVE", "DRAINING", "STOPPED"})
	oneHot(w, "nacos_ai_bridge_warm", "Warm-up status (1 for the current one).", "status",
		string(st.Warm), []string{"cold", "warming", "ready"})
	metrics.Gauge(w, "nacos_ai_bridge_inference_healthy", "1 while the inference probe passes.", b2f(st.InferenceHealthy))
	metrics.Gauge(w, "nacos_ai_bridge_in_flight", "Requests in flight through the bridge.", float64(st.InFlight))
	metrics.Counter(w, "nacos_ai_bridge_metadata_writes_total", "Metadata writes to Nacos.", float64(st.Writes.Writes))
	metrics.Counter(w, "nacos_ai_bridge_metadata_skips_total", "Health cycles with nothing worth a write.", float64(st.Writes.Skips))
	metrics.Counter(w, "nacos_ai_bridge_metadata_write_failures_total", "Failed metadata writes (retried next cycle).", float64(st.Writes.Failures))
	metrics.Counter(w, "nacos_ai_bridge_config_applies_total", "Inference config revisions applied.", float64(st.Config.Applies))
	metrics.Counter(w, "nacos_ai_bridge_config_rejections_total", "Inference config documents rejected.", float64(st.Config.Rejections))
	metrics.Header(w, "nacos_ai_bridge_config_info", "gauge", "The applied inference config revision.")
	metrics.Sample(w, "nacos_ai_bridge_config_info", metrics.Labels{"rev", st.ConfigRev, "state", string(st.Config.State)}, 1)
	for _, k := range []struct{ key, name, help string }{
		{metadata.KeyLatencyP50, "nacos_ai_bridge_inference_latency_p50_ms", "Published inference latency p50 (ms)."},
		{metadata.KeyLatencyP95, "nacos_ai_bridge_inference_latency_p95_ms", "Published inference latency p95 (ms)."},
	} {
		if v, err := strconv.ParseFloat(st.Metadata[k.key], 64); err == nil {
			metrics.Gauge(w, k.name, k.help, v)
		}
	}
}

// WriteProbes renders probe results (counter by probe and result) and
// probe durations (histogram by probe).
func WriteProbes(w io.Writer, probes []bridge.ProbeStats) {
	if len(probes) == 0 {
		return
	}
	metrics.Header(w, "nacos_ai_bridge_probe_total", "counter", "Health probe runs by probe and result.")
	for _, p := range probes {
		metrics.Sample(w, "nacos_ai_bridge_probe_total", metrics.Labels{"probe", p.Probe, "result", "pass"}, float64(p.Passed))
		metrics.Sample(w, "nacos_ai_bridge_probe_total", metrics.Labels{"probe", p.Probe, "result", "fail"}, float64(p.Failed))
	}
	const name = "nacos_ai_bridge_probe_duration_seconds"
	metrics.Header(w, name, "histogram", "Health probe duration, passed or failed.")
	for _, p := range probes {
		metrics.WriteHistogram(w, name, metrics.Labels{"probe", p.Probe}, p.Latency)
	}
}

func oneHot(w io.Writer, name, help, label, cur string, all []string) {
	metrics.Header(w, name, "gauge", help)
	vals := append([]string(nil), all...)
	sort.Strings(vals)
	for _, v := range vals {
		metrics.Sample(w, name, metrics.Labels{label, v}, b2f(strings.EqualFold(v, cur)))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
