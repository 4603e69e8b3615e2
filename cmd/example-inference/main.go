// Command example-inference is a Go inference service that links the bridge:
// it registers in Nacos, warms up before taking traffic, reports health and
// latency, applies the inference config from the Nacos console, and drains
// on SIGTERM before leaving. The "model" sleeps for a random service time.
//
//	NACOS_ADDR=127.0.0.1:8848 go run ./cmd/example-inference -port 18080
//
// Endpoints: POST /v1/completions (OpenAI-style; max_tokens is clamped to the
// config), GET /health.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/shutdown"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/warmup"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "example-inference:", err)
		os.Exit(1)
	}
}

func run() error {
	port := flag.Int("port", 18080, "HTTP port")
	service := flag.String("service", "example-inference", "Nacos service name")
	minMS := flag.Int("min-ms", 200, "shortest service time")
	maxMS := flag.Int("max-ms", 800, "longest service time")
	cycle := flag.Duration("cycle", 5*time.Second, "health cycle")
	rnacos := flag.Bool("rnacos", false, "the server is r-nacos (pinned first metadata, no re-enable over gRPC)")
	flag.Parse()
	addr := os.Getenv("NACOS_ADDR")
	if addr == "" {
		return fmt.Errorf("NACOS_ADDR is not set")
	}
	level := zerolog.InfoLevel
	if l, err := zerolog.ParseLevel(os.Getenv("LOG_LEVEL")); err == nil && l != zerolog.NoLevel {
		level = l
	}
	log := zerolog.New(os.Stderr).Level(level).With().Timestamp().Logger()

	nc, err := nacosreg.New(nacosreg.Options{Servers: []string{addr}, Logger: log, RNacosCompat: *rnacos})
	if err != nil {
		return err
	}
	defer nc.Close()

	mux := http.NewServeMux()
	var b *bridge.Bridge
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt    string `json:"prompt"`
			MaxTokens int    `json:"max_tokens"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		cfg := b.Config().For("example")
		if req.MaxTokens <= 0 || req.MaxTokens > cfg.MaxTokens {
			req.MaxTokens = cfg.MaxTokens
		}
		d := time.Duration(*minMS+rand.IntN(*maxMS-*minMS+1)) * time.Millisecond
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "text_completion", "max_tokens": req.MaxTokens,
			"choices": []map[string]string{{"text": "ok"}}, "served_by": *port})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*port))
	if err != nil {
		return err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(*port)
	probe := bridge.InferenceCheck{URL: base + "/v1/completions", Body: []byte(`{"prompt":"ping","max_tokens":1}`), MaxLatency: 5 * time.Second}
	b, err = bridge.New(bridge.Config{
		Service: *service, IP: "127.0.0.1", Port: *port, Cycle: *cycle,
		Static:             bridge.Static{Models: []string{"example"}, Tasks: []string{"generation"}, MaxConcurrent: 64},
		Warmup:             warmup.Config{Rounds: 5},
		DisableEnabledFlag: *rnacos,
	}, nc,
		bridge.WithLogger(log),
		bridge.WithConfig(nc),
		bridge.WithLiveness(bridge.HTTPCheck{URL: base + "/health"}),
		bridge.WithInferenceProbe(probe.Probe),
		bridge.WithWarmup(func(ctx context.Context, _ int) error { _, err := probe.Probe(ctx); return err }),
	)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: b.Middleware(mux), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := shutdown.Notify(ctx, func(context.Context) { cancel() }, func() { os.Exit(1) })
	defer stop()
	err = b.Run(ctx) // returns after the drain, once STOPPED
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	return err
}
