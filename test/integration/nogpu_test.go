//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/gpu"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/publish"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
)

// TestBridgeOnThisHost runs the bridge's publishing chain with this host's
// real NVML library (absent on CI: no driver): GPU fields are absent, or come
// from static config, and the applied config revision is published.
func TestBridgeOnThisHost(t *testing.T) {
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		a := nacostest.Client(t, s)
		b := nacostest.Client(t, s)
		store := inferencecfg.NewStore(zerolog.Nop(), nil)
		for i, static := range [][]gpu.Device{nil, {{Name: "NVIDIA L4", MemTotal: 24 << 30, Util: -1}}} {
			sampler, err := gpu.Open(nvml.New(), gpu.NVMLOptions{Logger: zerolog.Nop()}, static)
			if err == nil {
				t.Skip("this host has an NVML driver; the no-driver path is covered on CI")
			}
			reg := nacosreg.Registration{Service: "ai-nogpu", IP: "127.0.0.1", Port: 19300 + i, Enabled: true}
			pc := &pushCounter{seen: make(chan struct{}, 1), ip: reg.IP, port: reg.Port}
			sub, err := b.Subscribe(reg.Service, "", pc.push)
			if err != nil {
				t.Fatal(err)
			}
			pub := publish.New(a, reg, publish.Options{})
			d := &bridge.Desired{}
			live := bridge.Live{Lifecycle: metadata.Active, Warm: metadata.Ready, InferenceHealthy: metadata.True,
				LatencyP50MS: -1, LatencyP95MS: -1, QueueDepth: -1, Inflight: -1, KVCacheUsage: -1, ConfigRev: store.Current().Rev}
			if _, err := pub.Offer(d.Build(bridge.Static{Models: []string{"m"}}, live, sampler.Sample()), true); err != nil {
				t.Fatal(err)
			}
			deadline := time.After(10 * time.Second)
			var md map[string]string
			for md == nil {
				select {
				case <-pc.seen:
					_, md = pc.get()
				case <-deadline:
					t.Fatal("instance not seen")
				}
			}
			in, rep := metadata.Decode(md)
			if !rep.OK() || in.ConfigRev != store.Current().Rev || in.GPUHealthy != metadata.True {
				t.Fatalf("metadata %v (%v)", md, rep.Errors)
			}
			if static == nil && (in.GPUModel != "" || in.GPUCount.Set) {
				t.Fatalf("GPU fields published without a GPU: %v", md)
			}
			if static != nil && (in.GPUModel != "NVIDIA L4" || in.GPUMemTotal != metadata.IntOf(24576) || in.GPUMemAvailable.Set) {
				t.Fatalf("static GPU fields: %v", md)
			}
			sub.Stop()
			_ = a.Deregister(reg)
		}
	})
}
