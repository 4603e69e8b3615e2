package admin

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/metrics"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/publish"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
)

type fake struct{ st bridge.State }

func (f fake) State() bridge.State { return f.st }
func (f fake) Probes() []bridge.ProbeStats {
	h := metrics.NewHistogram(nil)
	h.Observe(2 * time.Millisecond)
	h.Observe(40 * time.Millisecond)
	h.Observe(5 * time.Second) // a timed-out probe
	return []bridge.ProbeStats{
		{Probe: bridge.ProbeReadiness, Passed: 9, Failed: 0, Latency: metrics.NewHistogram(nil).Snapshot()},
		{Probe: bridge.ProbeInference, Passed: 2, Failed: 1, Latency: h.Snapshot()},
	}
}

func (f fake) Events() []bridge.Event {
	return []bridge.Event{{Kind: "warm", From: "cold", To: "warming"}}
}

func TestEndpoints(t *testing.T) {
	st := bridge.State{Lifecycle: metadata.Active, Warm: metadata.Ready, InferenceHealthy: true, InFlight: 3,
		Metadata: map[string]string{metadata.KeyLatencyP95: "640"}, ConfigRev: `rev "7" \ ünïcode`,
		Config: inferencecfg.Status{State: inferencecfg.StateApplied, Applies: 2, Rejections: 1}, Writes: publish.Counters{Writes: 7, Skips: 30}}
	h := Handler(fake{st})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if c, _ := get("/healthz"); c != 200 {
		t.Fatal(c)
	}
	if c, _ := get("/readyz"); c != 200 {
		t.Fatal(c)
	}
	c, body := get("/metrics")
	if c != 200 {
		t.Fatal(c)
	}
	// Parse with the real Prometheus parser.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("metrics do not parse: %v\n%s", err, body)
	}
	if v := fams["nacos_ai_bridge_metadata_writes_total"].GetMetric()[0].GetCounter().GetValue(); v != 7 {
		t.Fatalf("writes %v", v)
	}
	for _, m := range fams["nacos_ai_bridge_lifecycle"].GetMetric() {
		if (m.GetLabel()[0].GetValue() == "ACTIVE") != (m.GetGauge().GetValue() == 1) {
			t.Fatalf("lifecycle one-hot wrong: %v", m)
		}
	}
	if v := fams["nacos_ai_bridge_inference_latency_p95_ms"].GetMetric()[0].GetGauge().GetValue(); v != 640 {
		t.Fatalf("p95 gauge %v, want 640", v)
	}
	if rev := fams["nacos_ai_bridge_config_info"].GetMetric()[0].GetLabel()[0].GetValue(); rev != st.ConfigRev {
		t.Fatalf("config rev label %q, want %q", rev, st.ConfigRev)
	}
	probes := map[string]float64{}
	for _, m := range fams["nacos_ai_bridge_probe_total"].GetMetric() {
		probes[m.GetLabel()[0].GetValue()+"/"+m.GetLabel()[1].GetValue()] = m.GetCounter().GetValue()
	}
	if probes["inference/pass"] != 2 || probes["inference/fail"] != 1 || probes["readiness/pass"] != 9 || len(probes) != 4 {
		t.Fatalf("probe counters %v", probes)
	}
	hists := fams["nacos_ai_bridge_probe_duration_seconds"].GetMetric()
	if len(hists) != 2 || hists[1].GetLabel()[0].GetValue() != "inference" || hists[1].GetHistogram().GetSampleCount() != 3 {
		t.Fatalf("probe histograms %v", hists)
	}
	c, body = get("/v1/state")
	var got map[string]any
	if c != 200 || json.Unmarshal([]byte(body), &got) != nil || got["lifecycle"] != "ACTIVE" || got["events"] == nil {
		t.Fatalf("state %d %s", c, body)
	}
	st.Lifecycle = metadata.Draining
	h = Handler(fake{st})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != 503 || !bytes.Contains(rec.Body.Bytes(), []byte("lifecycle=DRAINING")) {
		t.Fatalf("readyz while draining: %d %s", rec.Code, rec.Body)
	}
}
