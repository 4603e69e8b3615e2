package backend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// families is one parsed Prometheus exposition, by metric name.
type families map[string]*dto.MetricFamily

// parseMetrics parses the Prometheus text format. UTF-8 name validation
// accepts the colons that vLLM, SGLang and llama.cpp put in their names.
func parseMetrics(body []byte) (families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: prometheus text: %v", ErrMalformed, err)
	}
	return mfs, nil
}

// sample returns the value of the first family in names that is present,
// summed over its label sets (or their maximum when useMax). found is false
// when none is present, which is not an error: optional metrics (llama.cpp's
// KV ratio) come and go between engine versions.
func (f families) sample(names []string, useMax bool) (v float64, found bool, err error) {
	for _, name := range names {
		mf, ok := f[name]
		if !ok || len(mf.GetMetric()) == 0 {
			continue
		}
		for i, m := range mf.GetMetric() {
			var x float64
			switch {
			case m.Gauge != nil:
				x = m.GetGauge().GetValue()
			case m.Counter != nil:
				x = m.GetCounter().GetValue()
			case m.Untyped != nil:
				x = m.GetUntyped().GetValue()
			default:
				return 0, false, fmt.Errorf("%w: %s is a %s, want a gauge", ErrMalformed, name, mf.GetType())
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return 0, false, fmt.Errorf("%w: %s = %v", ErrMalformed, name, x)
			}
			switch {
			case i == 0:
				v = x
			case useMax:
				v = max(v, x)
			default:
				v += x
			}
		}
		return v, true, nil
	}
	return 0, false, nil
}

// load is what the metrics say about the engine's load.
type load struct {
	queue, running int64
	kv             float64
}

// readLoad extracts the load from parsed metrics; a field with no metric
// configured or present is Unknown. At least one configured metric must be
// present, or the endpoint is not the one we think it is.
func (f families) readLoad(s spec) (load, error) {
	l := load{queue: Unknown, running: Unknown, kv: Unknown}
	found := false
	for _, c := range []struct {
		names  []string
		useMax bool
		set    func(float64)
	}{
		{s.queue, false, func(v float64) { l.queue = toCount(v) }},
		{s.running, false, func(v float64) { l.running = toCount(v) }},
		{s.kv, true, func(v float64) { l.kv = min(max(v, 0), 1) }},
	} {
		v, ok, err := f.sample(c.names, c.useMax)
		if err != nil {
			return load{}, err
		}
		if ok {
			c.set(v)
			found = true
		}
	}
	if !found {
		var want []string
		want = append(append(append(want, s.queue...), s.running...), s.kv...)
		return load{}, fmt.Errorf("%w: none of %s in the exposition", ErrMalformed, strings.Join(want, ", "))
	}
	return l, nil
}

// toCount rounds a gauge to a request count; exporters write 3.0 for 3.
func toCount(v float64) int64 {
	if v < 0 {
		return 0
	}
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int64(math.Round(v))
}

// decode is json.Unmarshal with ErrMalformed on failure.
func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: json: %v", ErrMalformed, err)
	}
	return nil
}

// parseOpenAIModels reads GET /v1/models of the OpenAI API, which vLLM,
// SGLang and llama.cpp all serve: {"object":"list","data":[{"id":...}]}.
func parseOpenAIModels(body []byte) ([]string, error) {
	var r struct {
		Data *[]struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	if r.Data == nil {
		return nil, fmt.Errorf("%w: no \"data\" list", ErrMalformed)
	}
	out := make([]string, 0, len(*r.Data))
	for _, m := range *r.Data {
		out = appendName(out, m.ID)
	}
	return out, nil
}

// parseTritonIndex reads POST /v2/repository/index: a JSON array of
// {name, version, state, reason}. Only READY models serve requests; a model
// with several versions is listed once.
func parseTritonIndex(body []byte) ([]string, error) {
	var r *[]struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("%w: want a JSON array", ErrMalformed)
	}
	out := make([]string, 0, len(*r))
	for _, m := range *r {
		if m.State == "READY" {
			out = appendName(out, m.Name)
		}
	}
	return out, nil
}

// parseOllamaModels reads GET /api/ps (models in memory) or /api/tags
// (models pulled): {"models":[{"name":...,"model":...}]}.
func parseOllamaModels(body []byte) ([]string, error) {
	var r struct {
		Models *[]struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	if r.Models == nil {
		return nil, fmt.Errorf("%w: no \"models\" list", ErrMalformed)
	}
	out := make([]string, 0, len(*r.Models))
	for _, m := range *r.Models {
		if m.Name == "" {
			m.Name = m.Model
		}
		out = appendName(out, m.Name)
	}
	return out, nil
}

// parseAnyModels is the generic engine's reader: the OpenAI shape, the
// Ollama shape, a Triton-style array of objects, or an array of strings.
func parseAnyModels(body []byte) ([]string, error) {
	var probe any
	if err := decode(body, &probe); err != nil {
		return nil, err
	}
	switch v := probe.(type) {
	case map[string]any:
		if _, ok := v["data"]; ok {
			return parseOpenAIModels(body)
		}
		if _, ok := v["models"]; ok {
			return parseOllamaModels(body)
		}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			switch e := e.(type) {
			case string:
				out = appendName(out, e)
			case map[string]any:
				if st, ok := e["state"].(string); ok && st != "READY" {
					continue
				}
				name, _ := e["name"].(string)
				if name == "" {
					name, _ = e["id"].(string)
				}
				out = appendName(out, name)
			default:
				return nil, fmt.Errorf("%w: model list entry is %T", ErrMalformed, e)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: want {\"data\":[...]}, {\"models\":[...]} or an array", ErrMalformed)
}

// appendName adds a non-empty name once, keeping the engine's order.
func appendName(out []string, name string) []string {
	if name == "" {
		return out
	}
	for _, n := range out {
		if n == name {
			return out
		}
	}
	return append(out, name)
}

// parseSlots counts the busy slots in llama.cpp's GET /slots: an array of
// slots with "is_processing" (since 2024-09) or "state" (older: 0 idle,
// 1 processing).
func parseSlots(body []byte) (int64, error) {
	var slots *[]struct {
		IsProcessing *bool `json:"is_processing"`
		State        *int  `json:"state"`
	}
	if err := decode(body, &slots); err != nil {
		return 0, err
	}
	if slots == nil {
		return 0, fmt.Errorf("%w: want a JSON array of slots", ErrMalformed)
	}
	var n int64
	for _, s := range *slots {
		switch {
		case s.IsProcessing != nil:
			if *s.IsProcessing {
				n++
			}
		case s.State != nil:
			if *s.State != 0 {
				n++
			}
		default:
			return 0, fmt.Errorf("%w: slot without is_processing or state", ErrMalformed)
		}
	}
	return n, nil
}
