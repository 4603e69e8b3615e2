package backend

import "net/http"

// spec is what one engine exposes: default endpoints, how to read its model
// list, which metrics carry its load, and what its health codes mean.
type spec struct {
	health, models, metrics string // default paths; "" = no such source
	// modelsMethod and modelsBody: Triton's index is a POST with a JSON body.
	modelsMethod, modelsBody string
	parseModels              func([]byte) ([]string, error)
	// queue, running, kv: metric names, the first present one wins (vLLM
	// renamed gpu_cache_usage_perc to kv_cache_usage_perc in v1).
	queue, running, kv []string
	// notReady reports health codes that mean "up, not ready yet" (model
	// loading); every other non-2xx code means not live.
	notReady func(code int) bool
	// slots is llama.cpp's /slots, read for Running when /metrics is off.
	slots string
}

// is503 is the common "loading" answer: llama.cpp returns 503 while the
// model loads, SGLang and vLLM while the engine starts or is overloaded.
func is503(code int) bool { return code == http.StatusServiceUnavailable }

// specs holds one entry per engine in Engines.
var specs = map[string]spec{
	EngineVLLM: {
		// vllm/entrypoints/serve/instrumentator/health.py (earlier
		// openai/api_server.py): GET /health is 200 with an empty body and
		// 503 on EngineDeadError (later versions also while warming up or
		// draining). The HTTP server answers either way, so 503 reads as
		// live, not ready: Ready is what routing must follow.
		health:      "/health",
		models:      "/v1/models",
		metrics:     "/metrics",
		parseModels: parseOpenAIModels,
		queue:       []string{"vllm:num_requests_waiting"},
		running:     []string{"vllm:num_requests_running"},
		kv:          []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
		notReady:    is503,
	},
	EngineSGLang: {
		health:      "/health",
		models:      "/v1/models",
		metrics:     "/metrics", // needs --enable-metrics
		parseModels: parseOpenAIModels,
		queue:       []string{"sglang:num_queue_reqs"},
		running:     []string{"sglang:num_running_reqs"},
		kv:          []string{"sglang:token_usage"},
		notReady:    is503,
	},
	EngineTriton: {
		// KServe v2 protocol: ready is 200, not ready a 4xx (Triton
		// answers 400); the server is alive either way. Other 4xx (404:
		// wrong path) stay errors, so a misconfiguration is not hidden.
		health:       "/v2/health/ready",
		models:       "/v2/repository/index",
		modelsMethod: http.MethodPost,
		modelsBody:   `{"ready":true}`,
		metrics:      "/metrics", // on port 8002 unless MetricsPath says otherwise (see New)
		parseModels:  parseTritonIndex,
		queue:        []string{"nv_inference_pending_request_count"},
		notReady:     func(code int) bool { return code == http.StatusBadRequest || code == http.StatusServiceUnavailable },
	},
	EngineLlamaCpp: {
		health:      "/health",
		models:      "/v1/models",
		metrics:     "/metrics", // needs --metrics
		slots:       "/slots",
		parseModels: parseOpenAIModels,
		queue:       []string{"llamacpp:requests_deferred"},
		running:     []string{"llamacpp:requests_processing"},
		kv:          []string{"llamacpp:kv_cache_usage_ratio"},
		notReady:    is503,
	},
	EngineOllama: {
		// Ollama has no health route; GET / answers "Ollama is running".
		health:      "/",
		models:      "/api/ps",
		parseModels: parseOllamaModels,
		notReady:    is503,
	},
	EngineOpenAI: {
		// No standard health route: a 2xx /v1/models is the health check.
		models:      "/v1/models",
		parseModels: parseOpenAIModels,
		notReady:    is503,
	},
	EngineHTTP: {
		parseModels: parseAnyModels,
		notReady:    is503,
	},
}
