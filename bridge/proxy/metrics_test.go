package proxy

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/shutdown"
)

// TestWriteMetrics: streamed and unary requests land in their own latency
// histogram, a stream's full duration is counted, refusals are counted, and
// the exposition parses with Prometheus' parser.
func TestWriteMetrics(t *testing.T) {
	const gap = 120 * time.Millisecond
	stream := sseBackend(t, gap, nil)
	tracker := shutdown.NewTracker()
	p, base, client := front(t, Options{Backend: mustURL(t, stream.URL), Tracker: tracker})
	for range 2 {
		req, _ := http.NewRequest("GET", base+"/v1/stream", nil)
		if res, _ := do(t, client, req); res.StatusCode != 200 {
			t.Fatal(res.Status)
		}
	}
	unary, _ := echoBackend(t)
	q, qbase, qclient := front(t, Options{Backend: mustURL(t, unary.URL), Tracker: tracker})
	for range 3 {
		req, _ := http.NewRequest("GET", qbase+"/v1/models", nil)
		if res, _ := do(t, qclient, req); res.StatusCode != 200 {
			t.Fatal(res.Status)
		}
	}
	tracker.Refuse()
	req, _ := http.NewRequest("GET", qbase+"/v1/models", nil)
	if res, _ := do(t, qclient, req); res.StatusCode != http.StatusServiceUnavailable {
		t.Fatal(res.Status)
	}

	parse := func(p *Proxy) map[string]float64 {
		var buf bytes.Buffer
		p.WriteMetrics(&buf)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(buf.String()))
		if err != nil {
			t.Fatalf("metrics do not parse: %v\n%s", err, buf.String())
		}
		out := map[string]float64{}
		for name, f := range fams {
			for _, m := range f.GetMetric() {
				switch {
				case m.Histogram != nil:
					out[name+"{stream="+m.GetLabel()[0].GetValue()+"}_count"] = float64(m.GetHistogram().GetSampleCount())
					out[name+"{stream="+m.GetLabel()[0].GetValue()+"}_sum"] = m.GetHistogram().GetSampleSum()
				case m.Counter != nil:
					out[name] = m.GetCounter().GetValue()
				case m.Gauge != nil:
					out[name] = m.GetGauge().GetValue()
				}
			}
		}
		return out
	}
	const h = "nacos_ai_bridge_proxy_request_duration_seconds"
	got := parse(p)
	if got[h+"{stream=true}_count"] != 2 || got[h+"{stream=false}_count"] != 0 {
		t.Fatalf("stream proxy histograms: %v", got)
	}
	if s := got[h+"{stream=true}_sum"]; s < 2*gap.Seconds() {
		t.Fatalf("stream durations sum %.3fs, less than the two streams lasted", s)
	}
	got = parse(q)
	if got[h+"{stream=false}_count"] != 3 || got[h+"{stream=true}_count"] != 0 {
		t.Fatalf("unary proxy histograms: %v", got)
	}
	if got["nacos_ai_bridge_proxy_requests_total"] != 3 || got["nacos_ai_bridge_proxy_refused_total"] != 1 || got["nacos_ai_bridge_proxy_in_flight"] != 0 {
		t.Fatalf("counters: %v", got)
	}
}
