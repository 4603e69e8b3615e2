package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Unknown is the value of a load field the engine did not report, or whose
// last good value is too old to publish.
const Unknown = -1

// DefaultStaleAfter is how many consecutive failed metric polls keep the last
// good load before it turns Unknown: long enough to ride out one slow scrape,
// short enough that callers stop routing on a number nobody measured.
const DefaultStaleAfter = 3

// Engine names accepted by Config.Engine.
const (
	EngineVLLM     = "vllm"
	EngineSGLang   = "sglang"
	EngineTriton   = "triton"
	EngineLlamaCpp = "llamacpp"
	EngineOllama   = "ollama"
	EngineOpenAI   = "openai"
	EngineHTTP     = "http"
)

// Engines lists the valid values of Config.Engine, in the order error
// messages show them.
var Engines = []string{EngineVLLM, EngineSGLang, EngineTriton, EngineLlamaCpp, EngineOllama, EngineOpenAI, EngineHTTP}

// ErrUnknownEngine is returned by New for an engine not in Engines.
var ErrUnknownEngine = errors.New("backend: unknown engine")

// ErrMalformed marks a response that arrived but could not be understood
// (garbage Prometheus text, broken JSON, an unexpected shape). Poll wraps it
// in Status.Err.
var ErrMalformed = errors.New("malformed response")

// StatusError is an HTTP answer with a status the adapter cannot use.
type StatusError struct {
	Method, URL string
	Code        int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
}

// Status is what one poll learned about the engine.
type Status struct {
	// Live: the engine process answers its health endpoint (2xx, or a
	// "not ready yet" answer such as 503 while a model loads).
	Live bool
	// Ready: the engine says it can serve inference now (2xx health).
	Ready bool
	// Models served, as the engine names them; the last good list when this
	// poll could not read it (ModelsStale). nil when never read.
	Models []string
	// ModelsStale: Models was carried over from an earlier poll.
	ModelsStale bool
	// QueueDepth is the number of requests waiting; Unknown when not known.
	QueueDepth int64
	// Running is the number of requests being served; Unknown when not known.
	Running int64
	// KVCacheUsage is the KV-cache usage in 0..1; Unknown when not known.
	KVCacheUsage float64
	// LoadAge is how many consecutive polls the load fields (QueueDepth,
	// Running, KVCacheUsage) were carried over instead of read; 0 when read
	// by this poll.
	LoadAge int
	// Err is what went wrong in this poll, each part prefixed by what was
	// being read ("health: ", "models: ", "metrics: "); nil when all fine.
	Err error
}

// Adapter reads one engine. Implementations are safe for concurrent use.
type Adapter interface {
	// Engine is the Config.Engine the adapter was built for.
	Engine() string
	// Poll reads health, models and load within ctx's deadline. It never
	// fails as a whole: what could not be read is in Status.Err.
	Poll(ctx context.Context) Status
}

// Config selects and points an adapter at an engine.
type Config struct {
	// Engine is one of Engines.
	Engine string
	// BaseURL is the engine's HTTP address, e.g. http://127.0.0.1:8000.
	BaseURL string
	// HealthPath, ModelsPath and MetricsPath override the engine's defaults.
	// Each may be a path joined to BaseURL or an absolute URL (Triton serves
	// metrics on another port). "-" turns that source off. Engine "http"
	// needs HealthPath; its other sources are off unless set.
	HealthPath, ModelsPath, MetricsPath string
	// QueueMetric, RunningMetric and KVMetric name the Prometheus metrics for
	// engines "openai" and "http" (and override the defaults of the others).
	// KVMetric must be a 0..1 fraction.
	QueueMetric, RunningMetric, KVMetric string
	// InFlight, when set, gives Running for an engine without a metrics
	// source (Ollama): the proxy in front of it counts its own requests.
	InFlight func() int64
	// StaleAfter is how many failed metric polls keep the last good load
	// (default DefaultStaleAfter; negative: never keep it).
	StaleAfter int
}

// New builds the adapter for cfg.Engine. client is used for every request
// (nil: a plain http.Client); deadlines come from Poll's context.
func New(cfg Config, client *http.Client) (Adapter, error) {
	spec, ok := specs[cfg.Engine]
	if !ok {
		return nil, fmt.Errorf("%w %q: valid engines are %s", ErrUnknownEngine, cfg.Engine, strings.Join(Engines, ", "))
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("backend: %s: base URL %q: want http(s)://host[:port]", cfg.Engine, cfg.BaseURL)
	}
	if cfg.Engine == EngineHTTP && (cfg.HealthPath == "" || cfg.HealthPath == "-") {
		return nil, fmt.Errorf("backend: http: HealthPath is required (the generic engine has no default endpoints)")
	}
	if client == nil {
		client = &http.Client{}
	}
	a := &adapter{
		engine:     cfg.Engine,
		spec:       spec,
		client:     client,
		inFlight:   cfg.InFlight,
		staleAfter: cfg.StaleAfter,
	}
	if a.staleAfter == 0 {
		a.staleAfter = DefaultStaleAfter
	}
	if a.healthURL, err = resolve(base, cfg.HealthPath, spec.health); err != nil {
		return nil, fmt.Errorf("backend: %s: health: %w", cfg.Engine, err)
	}
	if a.modelsURL, err = resolve(base, cfg.ModelsPath, spec.models); err != nil {
		return nil, fmt.Errorf("backend: %s: models: %w", cfg.Engine, err)
	}
	metricsDefault := spec.metrics
	if cfg.Engine == EngineTriton && cfg.MetricsPath == "" {
		// Triton serves Prometheus on its own port (8002 by default), not
		// on the HTTP inference port that BaseURL points at.
		u := *base
		u.Host = net.JoinHostPort(base.Hostname(), "8002")
		u.Path, u.RawPath = "", ""
		metricsDefault = u.String() + "/metrics"
	}
	if a.metricsURL, err = resolve(base, cfg.MetricsPath, metricsDefault); err != nil {
		return nil, fmt.Errorf("backend: %s: metrics: %w", cfg.Engine, err)
	}
	if spec.slots != "" {
		a.slotsURL, _ = resolve(base, "", spec.slots)
	}
	for _, o := range []struct {
		dst *[]string
		v   string
	}{{&a.spec.queue, cfg.QueueMetric}, {&a.spec.running, cfg.RunningMetric}, {&a.spec.kv, cfg.KVMetric}} {
		if o.v != "" {
			*o.dst = []string{o.v}
		}
	}
	if a.metricsURL != "" && len(a.spec.queue)+len(a.spec.running)+len(a.spec.kv) == 0 {
		return nil, fmt.Errorf("backend: %s: MetricsPath is set but no QueueMetric, RunningMetric or KVMetric names a metric to read", cfg.Engine)
	}
	return a, nil
}

// resolve turns an override (or the default when the override is empty) into
// a URL; "" or "-" means the source is off.
func resolve(base *url.URL, override, def string) (string, error) {
	p := override
	if p == "" {
		p = def
	}
	if p == "" || p == "-" {
		return "", nil
	}
	ref, err := url.Parse(p)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", p, err)
	}
	if ref.IsAbs() {
		if ref.Scheme != "http" && ref.Scheme != "https" || ref.Host == "" {
			return "", fmt.Errorf("URL %q: want http(s)://host[:port]/path", p)
		}
		return ref.String(), nil
	}
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + "/" + strings.TrimPrefix(ref.Path, "/")
	u.RawPath = ""
	u.RawQuery = ref.RawQuery
	return u.String(), nil
}
