package proxy

import (
	"io"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/metrics"
)

// LatencyHistogram returns the histogram of request durations, admission to
// last byte, for streamed responses (text/event-stream, NDJSON) or for the
// others. Refused requests are not in it.
func (p *Proxy) LatencyHistogram(stream bool) metrics.HistogramSnapshot {
	if stream {
		return p.streamHist.Snapshot()
	}
	return p.unaryHist.Snapshot()
}

// WriteMetrics writes the proxy's series in Prometheus text format, for an
// admin /metrics endpoint (admin.Extra has this signature).
func (p *Proxy) WriteMetrics(w io.Writer) {
	s := p.counters()
	metrics.Gauge(w, "nacos_ai_bridge_proxy_in_flight", "Requests in flight through the proxy.", float64(s.InFlight))
	for _, c := range []struct {
		name, help string
		v          uint64
	}{
		{"requests", "Requests admitted and forwarded to the backend.", s.Requests},
		{"refused", "Requests answered 503 while draining.", s.Refused},
		{"failures", "Requests the backend did not answer (502, or cut mid-body).", s.Failures},
		{"canceled", "Requests the client abandoned.", s.Canceled},
		{"rewritten", "Request bodies changed by the inference config.", s.Rewritten},
		{"clamped", "Rewritten bodies whose token limit was clamped.", s.Clamped},
		{"malformed", "Bodies on a rewrite path that were not a JSON object, passed on unchanged.", s.Malformed},
		{"oversized", "Bodies over the rewrite size limit, passed on unread.", s.Oversized},
	} {
		metrics.Counter(w, "nacos_ai_bridge_proxy_"+c.name+"_total", c.help, float64(c.v))
	}
	const name = "nacos_ai_bridge_proxy_request_duration_seconds"
	metrics.Header(w, name, "histogram", "Proxied request duration, admission to the last byte of the response, by whether it was a token stream.")
	metrics.WriteHistogram(w, name, metrics.Labels{"stream", "false"}, p.unaryHist.Snapshot())
	metrics.WriteHistogram(w, name, metrics.Labels{"stream", "true"}, p.streamHist.Snapshot())
}
