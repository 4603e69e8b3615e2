package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// runConfig is conf/bridge.yaml: everything `run` needs, every field
// documented in the commented example.
type runConfig struct {
	Nacos struct {
		Servers   []string `yaml:"servers"`
		Namespace string   `yaml:"namespace"`
		Group     string   `yaml:"group"`
		Username  string   `yaml:"username"`
		Password  string   `yaml:"password"`
		RNacos    bool     `yaml:"rnacos"`
	} `yaml:"nacos"`
	Service struct {
		Name    string   `yaml:"name"`
		IP      string   `yaml:"ip"`
		Port    int      `yaml:"port"`
		Cluster string   `yaml:"cluster"`
		Weight  int      `yaml:"weight"`
		Region  string   `yaml:"region"`
		Locales []string `yaml:"locales"`
	} `yaml:"service"`
	Backend struct {
		Engine        string   `yaml:"engine"`
		URL           string   `yaml:"url"`
		HealthPath    string   `yaml:"health-path"`
		ModelsPath    string   `yaml:"models-path"`
		MetricsPath   string   `yaml:"metrics-path"`
		QueueMetric   string   `yaml:"queue-metric"`
		RunningMetric string   `yaml:"running-metric"`
		KVMetric      string   `yaml:"kv-metric"`
		Models        []string `yaml:"models"`
		Tasks         []string `yaml:"tasks"`
		MaxConcurrent int      `yaml:"max-concurrent"`
		MaxTokens     int      `yaml:"max-tokens"`
		ModelVersion  string   `yaml:"model-version"`
	} `yaml:"backend"`
	GPU struct {
		Visible string `yaml:"visible"`
		Static  []struct {
			Name      string `yaml:"name"`
			MemoryMiB int64  `yaml:"memory-mib"`
		} `yaml:"static"`
	} `yaml:"gpu"`
	Health struct {
		Cycle            time.Duration `yaml:"cycle"`
		InferenceEvery   int           `yaml:"inference-every"`
		LivenessFailures int           `yaml:"liveness-failures"`
		ProbeTimeout     time.Duration `yaml:"probe-timeout"`
		Probe            struct {
			Path       string        `yaml:"path"`
			Body       string        `yaml:"body"`
			MaxLatency time.Duration `yaml:"max-latency"`
		} `yaml:"probe"`
	} `yaml:"health"`
	Warmup struct {
		Rounds       int           `yaml:"rounds"`
		RoundTimeout time.Duration `yaml:"round-timeout"`
		Total        time.Duration `yaml:"total"`
		MinSuccess   float64       `yaml:"min-success"`
		TargetP95    time.Duration `yaml:"target-p95"`
	} `yaml:"warmup"`
	Drain struct {
		PropagationDelay time.Duration `yaml:"propagation-delay"`
		Timeout          time.Duration `yaml:"timeout"`
	} `yaml:"drain"`
	Proxy struct {
		Enabled bool   `yaml:"enabled"`
		Listen  string `yaml:"listen"`
	} `yaml:"proxy"`
	Admin struct {
		Listen string `yaml:"listen"`
	} `yaml:"admin"`
	InferenceConfig struct {
		DataID    string `yaml:"data-id"`
		Group     string `yaml:"group"`
		ReloadURL string `yaml:"reload-url"`
		File      string `yaml:"file"`
	} `yaml:"inference-config"`
	Log struct {
		Level string `yaml:"level"`
	} `yaml:"log"`
}

var engines = []string{"vllm", "sglang", "triton", "llamacpp", "ollama", "openai", "http"}

// loadRunConfig reads the file (strict: unknown keys are errors), applies
// the environment overrides and defaults, and validates, returning every
// problem at once.
func loadRunConfig(path string, env func(string) string) (*runConfig, error) {
	var c runConfig
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) { // an empty file is all defaults
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	// The usual deployment values, from the environment.
	if v := env("NACOS_ADDR"); v != "" {
		c.Nacos.Servers = strings.Split(v, ",")
	}
	for name, dst := range map[string]*string{
		"NACOS_NAMESPACE": &c.Nacos.Namespace, "NACOS_USERNAME": &c.Nacos.Username, "NACOS_PASSWORD": &c.Nacos.Password,
		"NACOS_AI_SERVICE": &c.Service.Name, "NACOS_AI_BACKEND_URL": &c.Backend.URL, "NACOS_AI_SERVICE_IP": &c.Service.IP,
	} {
		if v := env(name); v != "" {
			*dst = v
		}
	}
	if v := env("NACOS_AI_SERVICE_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("NACOS_AI_SERVICE_PORT=%q: not a port", v)
		}
		c.Service.Port = p
	}
	c.defaults()
	if errs := c.validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &c, nil
}

func (c *runConfig) defaults() {
	if c.Nacos.Group == "" {
		c.Nacos.Group = "AI_SERVICE"
	}
	if c.Service.IP == "" {
		c.Service.IP = "127.0.0.1"
	}
	if c.Backend.Engine == "" {
		c.Backend.Engine = "openai"
	}
	if c.Admin.Listen == "" {
		c.Admin.Listen = "127.0.0.1:9100"
	}
	if c.Proxy.Listen == "" && c.Service.Port > 0 {
		c.Proxy.Listen = net.JoinHostPort(c.Service.IP, strconv.Itoa(c.Service.Port))
	}
	if c.Health.Probe.Path == "" {
		c.Health.Probe.Path = "/v1/completions"
	}
	if c.Health.Probe.Body == "" {
		c.Health.Probe.Body = `{"prompt":"ping","max_tokens":1}`
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
}

func (c *runConfig) validate() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...)))
	}
	if len(c.Nacos.Servers) == 0 {
		bad("nacos.servers", "required (or NACOS_ADDR)")
	}
	if c.Service.Name == "" {
		bad("service.name", "required (or NACOS_AI_SERVICE)")
	}
	if net.ParseIP(c.Service.IP) == nil {
		bad("service.ip", "%q is not an IP address", c.Service.IP)
	}
	if c.Service.Port < 1 || c.Service.Port > 65535 {
		bad("service.port", "%d is out of range 1..65535", c.Service.Port)
	}
	if c.Service.Weight < 0 || c.Service.Weight > 10000 {
		bad("service.weight", "%d is out of range 0..10000", c.Service.Weight)
	}
	if !slices.Contains(engines, c.Backend.Engine) {
		bad("backend.engine", "%q is not one of %s", c.Backend.Engine, strings.Join(engines, ", "))
	}
	if u, err := url.Parse(c.Backend.URL); err != nil || c.Backend.URL == "" || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("backend.url", "%q is not an http(s) URL (or NACOS_AI_BACKEND_URL)", c.Backend.URL)
	}
	if c.Backend.Engine == "http" && c.Backend.HealthPath == "" {
		bad("backend.health-path", "required for engine http")
	}
	if (c.Backend.Engine == "openai" || c.Backend.Engine == "http") && c.Backend.MetricsPath != "" && c.Backend.MetricsPath != "-" &&
		c.Backend.QueueMetric == "" && c.Backend.RunningMetric == "" && c.Backend.KVMetric == "" {
		bad("backend.metrics-path", "engine %s has no metric names of its own: set queue-metric, running-metric and/or kv-metric", c.Backend.Engine)
	}
	if c.Backend.MaxConcurrent < 0 || c.Backend.MaxTokens < 0 {
		bad("backend", "max-concurrent and max-tokens must not be negative")
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"health.cycle", c.Health.Cycle}, {"health.probe-timeout", c.Health.ProbeTimeout}, {"drain.propagation-delay", c.Drain.PropagationDelay},
		{"drain.timeout", c.Drain.Timeout}, {"warmup.round-timeout", c.Warmup.RoundTimeout}, {"warmup.total", c.Warmup.Total}} {
		if d.v < 0 {
			bad(d.key, "%v is negative", d.v)
		}
	}
	if c.Warmup.MinSuccess < 0 || c.Warmup.MinSuccess > 1 {
		bad("warmup.min-success", "%v is out of range 0..1", c.Warmup.MinSuccess)
	}
	if _, _, err := net.SplitHostPort(c.Admin.Listen); err != nil {
		bad("admin.listen", "%q: %v", c.Admin.Listen, err)
	}
	if c.Proxy.Enabled {
		if _, _, err := net.SplitHostPort(c.Proxy.Listen); err != nil {
			bad("proxy.listen", "%q: %v", c.Proxy.Listen, err)
		}
	}
	if c.InferenceConfig.ReloadURL != "" {
		if u, err := url.Parse(c.InferenceConfig.ReloadURL); err != nil || u.Host == "" {
			bad("inference-config.reload-url", "%q is not a URL", c.InferenceConfig.ReloadURL)
		}
	}
	if !slices.Contains([]string{"trace", "debug", "info", "warn", "error"}, c.Log.Level) {
		bad("log.level", "%q is not one of trace, debug, info, warn, error", c.Log.Level)
	}
	return errs
}
