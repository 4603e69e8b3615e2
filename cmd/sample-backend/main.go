// Command sample-backend is a tiny OpenAI-compatible model server for the
// demo: /v1/completions and /v1/chat/completions answer after a random
// service time, /v1/models lists one model, /health answers, and /metrics
// reports vLLM-style gauges, so the sidecar's vllm adapter reads it like the
// real thing. It echoes the sampling parameters it received, which shows the
// inference config the sidecar applied.
//
//	go run ./cmd/sample-backend -port 8001 -model qwen2.5-7b-instruct
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

func main() {
	port := flag.Int("port", 8001, "HTTP port (on 127.0.0.1)")
	model := flag.String("model", "qwen2.5-7b-instruct", "model id")
	minMS := flag.Int("min-ms", 20, "shortest service time")
	maxMS := flag.Int("max-ms", 80, "longest service time")
	flag.Parse()
	var running atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"sample"}]}`, *model)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		r := running.Load()
		fmt.Fprintf(w, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=%q} %d\n", *model, r)
		fmt.Fprintf(w, "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=%q} 0\n", *model)
		fmt.Fprintf(w, "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=%q} %.2f\n", *model, min(float64(r)/16, 1))
	})
	complete := func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		defer running.Add(-1)
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		time.Sleep(time.Duration(*minMS+rand.IntN(*maxMS-*minMS+1)) * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"object": "text_completion", "model": *model, "served_by": "127.0.0.1:" + strconv.Itoa(*port),
			"choices": []map[string]string{{"text": "hello"}},
			"params":  map[string]any{"temperature": req["temperature"], "top_p": req["top_p"], "max_tokens": req["max_tokens"]},
		})
	}
	mux.HandleFunc("POST /v1/completions", complete)
	mux.HandleFunc("POST /v1/chat/completions", complete)
	srv := &http.Server{Addr: "127.0.0.1:" + strconv.Itoa(*port), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
