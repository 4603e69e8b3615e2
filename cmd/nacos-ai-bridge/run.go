package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/admin"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/backend"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/gpu"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/proxy"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/shutdown"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/warmup"
)

func runCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "conf/bridge.yaml", "bridge config file")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: nacos-ai-bridge run [-config conf/bridge.yaml]\n\nRuns the sidecar: registers the backend in Nacos, keeps its metadata true,\nwarms it up, applies the inference config, proxies requests and drains on\nSIGTERM. Environment overrides: NACOS_ADDR, NACOS_NAMESPACE, NACOS_USERNAME,\nNACOS_PASSWORD, NACOS_AI_SERVICE, NACOS_AI_SERVICE_IP, NACOS_AI_SERVICE_PORT,\nNACOS_AI_BACKEND_URL.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := loadRunConfig(*cfgPath, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "nacos-ai-bridge: invalid config:\n%v\n", err)
		return err
	}
	lvl, _ := zerolog.ParseLevel(c.Log.Level)
	log := zerolog.New(stderr).Level(lvl).With().Timestamp().Logger()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := shutdown.Notify(ctx, func(context.Context) { cancel() }, func() { os.Exit(1) })
	defer stop()
	if err := runSidecar(ctx, c, log); err != nil {
		log.Error().Err(err).Msg("stopped with an error")
		return err
	}
	return nil
}

// runSidecar runs until ctx is cancelled, then drains and returns.
func runSidecar(ctx context.Context, c *runConfig, log zerolog.Logger) error {
	nc, err := nacosreg.New(nacosreg.Options{
		Servers: c.Nacos.Servers, Namespace: c.Nacos.Namespace, Group: c.Nacos.Group,
		Username: c.Nacos.Username, Password: c.Nacos.Password, Logger: log, RNacosCompat: c.Nacos.RNacos,
	})
	if err != nil {
		return err
	}
	defer nc.Close()

	backendURL, _ := url.Parse(c.Backend.URL) // validated
	var px *proxy.Proxy
	ad, err := backend.New(backend.Config{
		Engine: c.Backend.Engine, BaseURL: c.Backend.URL,
		HealthPath: c.Backend.HealthPath, ModelsPath: c.Backend.ModelsPath, MetricsPath: c.Backend.MetricsPath,
		QueueMetric: c.Backend.QueueMetric, RunningMetric: c.Backend.RunningMetric, KVMetric: c.Backend.KVMetric,
		InFlight: func() int64 {
			if px == nil {
				return -1
			}
			return px.InFlight()
		},
	}, nil)
	if err != nil {
		return err
	}
	// One poll per health cycle: liveness polls, readiness and load read it.
	var mu sync.Mutex
	var last backend.Status
	liveness := bridge.CheckFunc(func(ctx context.Context) error {
		s := ad.Poll(ctx)
		mu.Lock()
		last = s
		mu.Unlock()
		if !s.Live {
			return fmt.Errorf("backend %s not live: %v", c.Backend.Engine, s.Err)
		}
		return nil
	})
	readiness := bridge.CheckFunc(func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if !last.Ready {
			return fmt.Errorf("backend %s not ready", c.Backend.Engine)
		}
		return nil
	})
	load := func() bridge.Load {
		mu.Lock()
		defer mu.Unlock()
		l := bridge.Load{QueueDepth: last.QueueDepth, Inflight: last.Running, KVCacheUsage: -1}
		if last.KVCacheUsage >= 0 {
			l.KVCacheUsage = int64(last.KVCacheUsage*100 + 0.5)
		}
		return l
	}
	models := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return last.Models
	}

	sel, err := gpu.ParseSelector(c.GPU.Visible)
	if err != nil {
		return err
	}
	var static []gpu.Device
	for i, d := range c.GPU.Static {
		static = append(static, gpu.Device{Index: i, Name: d.Name, MemTotal: uint64(d.MemoryMiB) << 20, Util: -1, TempC: -1, PowerMW: -1})
	}
	sampler, gerr := gpu.Open(nvml.New(), gpu.NVMLOptions{Select: sel, Logger: log}, static)
	if gerr != nil {
		log.Info().Str("gpu", "static or none").Msg(gerr.Error())
	}
	defer sampler.Close()

	probe := bridge.InferenceCheck{URL: backendURL.JoinPath(c.Health.Probe.Path).String(), Body: []byte(c.Health.Probe.Body), MaxLatency: c.Health.Probe.MaxLatency}
	b, err := bridge.New(bridge.Config{
		Service: c.Service.Name, Group: c.Nacos.Group, Cluster: c.Service.Cluster, IP: c.Service.IP, Port: c.Service.Port,
		Static: bridge.Static{Models: c.Backend.Models, ModelVersion: c.Backend.ModelVersion, MaxConcurrent: c.Backend.MaxConcurrent,
			MaxTokens: c.Backend.MaxTokens, Tasks: c.Backend.Tasks, Weight: c.Service.Weight, Locales: c.Service.Locales, Region: c.Service.Region},
		Cycle: c.Health.Cycle, InferenceEvery: c.Health.InferenceEvery, LivenessFailures: c.Health.LivenessFailures, ProbeTimeout: c.Health.ProbeTimeout,
		Warmup: warmup.Config{Rounds: c.Warmup.Rounds, RoundTimeout: c.Warmup.RoundTimeout, Total: c.Warmup.Total,
			MinSuccess: c.Warmup.MinSuccess, TargetP95: c.Warmup.TargetP95},
		PropagationDelay: c.Drain.PropagationDelay, DrainTimeout: c.Drain.Timeout, DisableEnabledFlag: c.Nacos.RNacos,
		ConfigSource: inferencecfg.Source{DataID: c.InferenceConfig.DataID, Group: c.InferenceConfig.Group, Service: c.Service.Name},
	}, nc,
		bridge.WithLogger(log), bridge.WithConfig(nc), bridge.WithGPU(sampler),
		bridge.WithLiveness(liveness), bridge.WithReadiness(readiness), bridge.WithLoad(load), bridge.WithModels(models),
		bridge.WithInferenceProbe(probe.Probe),
		bridge.WithWarmup(func(ctx context.Context, _ int) error { _, err := probe.Probe(ctx); return err }),
	)
	if err != nil {
		return err
	}
	if c.InferenceConfig.ReloadURL != "" || c.InferenceConfig.File != "" {
		h := newHandoff(c.InferenceConfig.ReloadURL, c.InferenceConfig.File, log)
		h.start()
		defer h.close()
		cancelSub := b.SubscribeConfig(func(_, n *inferencecfg.Config) { h.offer(n) })
		defer cancelSub()
	}

	// The listeners stop after the drain (the proxy must serve until then)
	// or when start-up fails half-way.
	var servers []*http.Server
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
		if px != nil {
			px.CloseIdleConnections()
		}
	}()
	serve := func(addr string, h http.Handler, what string) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s listen %s: %w", what, addr, err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }() // ends with srv.Shutdown below
		log.Info().Str("listen", ln.Addr().String()).Msg(what + " listening")
		return nil
	}
	var extra []admin.Extra
	if c.Proxy.Enabled {
		px, err = proxy.New(proxy.Options{Backend: backendURL, Config: b.Config, Tracker: b.Tracker(), Logger: log})
		if err != nil {
			return err
		}
		if err := serve(c.Proxy.Listen, px, "proxy"); err != nil {
			return err
		}
		extra = append(extra, px.WriteMetrics)
	}
	if err := serve(c.Admin.Listen, admin.Handler(b, extra...), "admin"); err != nil {
		return err
	}
	return b.Run(ctx) // returns after the drain, once STOPPED
}
