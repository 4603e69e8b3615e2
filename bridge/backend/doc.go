// Package backend reads what an inference engine really exposes — its health
// endpoint, its model list and its load — and turns it into one Status per
// poll, so the bridge can publish inference health, loaded models, queue
// depth, in-flight requests and KV-cache usage without knowing the engine.
//
// One Adapter per engine, chosen by Config.Engine:
//
//	vllm      GET /health, GET /v1/models, /metrics:
//	          vllm:num_requests_waiting, vllm:num_requests_running,
//	          vllm:kv_cache_usage_perc (older: vllm:gpu_cache_usage_perc)
//	sglang    GET /health, GET /v1/models, /metrics:
//	          sglang:num_queue_reqs, sglang:num_running_reqs, sglang:token_usage
//	triton    GET /v2/health/ready, POST /v2/repository/index (READY models only),
//	          metrics on port 8002: nv_inference_pending_request_count
//	llamacpp  GET /health, GET /v1/models, /metrics (needs --metrics):
//	          llamacpp:requests_deferred, llamacpp:requests_processing,
//	          llamacpp:kv_cache_usage_ratio when the build has it; without
//	          --metrics, GET /slots gives the running count
//	ollama    GET /, GET /api/ps (models in memory); no metrics: Running comes
//	          from Config.InFlight, the proxy's own in-flight count
//	openai    GET /v1/models doubles as the health check; metrics only when
//	          configured
//	http      every path and metric name from configuration
//
// Prometheus text is parsed with prometheus/common/expfmt, never with regular
// expressions, and each metric is summed over its label sets (vLLM and SGLang
// label per model, vLLM v1 also per engine rank); KV-cache usage takes the
// maximum instead, because the fullest engine is the one that refuses work.
//
// Partial failures are normal and reported, not fatal: a poll always returns
// a Status, with Err listing what went wrong ("metrics: ...", "models: ...").
// When the model list cannot be read the last good list is kept
// (ModelsStale). When the load cannot be read the last good values are kept
// for at most Config.StaleAfter polls (default 3, LoadAge counts them) and
// then reported as unknown (-1), so a stuck exporter cannot pin a stale
// queue depth in Nacos forever.
//
// Concurrency: an Adapter may be used from any goroutine; Poll calls are
// serialised because each poll updates the last good values. An Adapter owns
// no goroutine and needs no Close.
package backend
