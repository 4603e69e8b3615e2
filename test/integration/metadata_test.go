//go:build integration

package integration

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/gpu"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/publish"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
)

// jitterGPU is a fake of our gpu.Sampler: 8 GPUs whose readings jitter
// around a constant load, as real ones do.
type jitterGPU struct{ r *rand.Rand }

func (g *jitterGPU) Sample() gpu.Snapshot {
	s := gpu.Snapshot{Source: gpu.SourceNVML, Healthy: true}
	for i := 0; i < 8; i++ {
		free := uint64(40<<30) + uint64(g.r.Int64N(600<<20)) // ±0.4% of 80 GiB
		s.Devices = append(s.Devices, gpu.Device{Index: i, Name: "NVIDIA H100 80GB HBM3", MemTotal: 80 << 30,
			MemFree: free, MemKnown: true, Util: 55 + g.r.IntN(11), TempC: 60, PowerMW: 400000})
	}
	return s
}
func (g *jitterGPU) Close() error { return nil }

// pushCounter counts the lists a subscriber receives for one instance.
type pushCounter struct {
	mu    sync.Mutex
	n     int
	last  map[string]string
	seen  chan struct{}
	ip    string
	port  int
	first time.Time
}

func (p *pushCounter) push(l []nacosreg.Instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := find(l, p.ip, p.port); i != nil {
		p.n++
		p.last = i.Metadata
	}
	select {
	case p.seen <- struct{}{}:
	default:
	}
}

func (p *pushCounter) get() (int, map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, p.last
}

// TestMetadataCoalescing runs a bridge-side publisher with a jittering GPU
// for simulated minutes of 5 s cycles against each server, with a second
// client counting the pushes it receives; then measures how fast critical
// changes reach a subscriber.
func TestMetadataCoalescing(t *testing.T) {
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		a := nacostest.Client(t, s)
		b := nacostest.Client(t, s)
		svc := "ai-coalesce"
		reg := nacosreg.Registration{Service: svc, IP: "127.0.0.1", Port: 19101, Enabled: true}
		pc := &pushCounter{seen: make(chan struct{}, 1), ip: reg.IP, port: reg.Port}
		sub, err := b.Subscribe(svc, "", pc.push)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Stop()

		sim := time.Unix(1764566400, 0)
		pub := publish.New(a, reg, publish.Options{Now: func() time.Time { return sim }})
		g := &jitterGPU{r: rand.New(rand.NewPCG(7, 11))}
		d := &bridge.Desired{}
		st := bridge.Static{Models: []string{"qwen2.5-7b-instruct", "qwen2.5-72b-instruct", "llama-3.1-8b-instruct", "bge-m3", "deepseek-r1-distill-qwen-32b"},
			MaxConcurrent: 256, MaxTokens: 32768, Tasks: []string{"generation", "embedding"}, Weight: 100}
		r := rand.New(rand.NewPCG(3, 5))
		live := func(warm metadata.WarmStatus) bridge.Live {
			return bridge.Live{Lifecycle: metadata.Active, Warm: warm, InferenceHealthy: metadata.True,
				LatencyP50MS: 200 + r.Int64N(25) - 12, LatencyP95MS: 600 + r.Int64N(80) - 40,
				QueueDepth: 2 + r.Int64N(3) - 1, Inflight: 12 + r.Int64N(5) - 2, KVCacheUsage: 40 + r.Int64N(7) - 3}
		}

		// 1. Steady state: 3 simulated minutes (36 cycles), 150 ms apart in
		//    real time so every write's push can arrive before the next.
		const cycles, minutes = 36, 3.0
		for c := 0; c < cycles; c++ {
			if _, err := pub.Offer(d.Build(st, live(metadata.Ready), g.Sample()), true); err != nil {
				t.Fatal(err)
			}
			sim = sim.Add(5 * time.Second)
			time.Sleep(150 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond) // last push
		cnt := pub.Counters()
		pushes, last := pc.get()
		if last == nil {
			t.Fatal("subscriber never saw the instance")
		}
		size := metadata.Size(last)

		// 2. Critical changes: warm status flips, each timed from the write
		//    to the subscriber seeing it.
		var lat []time.Duration
		warm := metadata.Ready
		for i := 0; i < 20; i++ {
			if warm == metadata.Ready {
				warm = metadata.Warming
			} else {
				warm = metadata.Ready
			}
			sim = sim.Add(5 * time.Second)
			start := time.Now()
			wrote, err := pub.Offer(d.Build(st, live(warm), g.Sample()), true)
			if err != nil || !wrote {
				t.Fatalf("critical change not written: wrote=%v err=%v", wrote, err)
			}
			deadline := time.After(10 * time.Second)
			for {
				_, m := pc.get()
				if m[metadata.KeyWarmStatus] == string(warm) {
					break
				}
				select {
				case <-pc.seen:
				case <-deadline:
					t.Fatalf("warm.status=%s not seen within 10s", warm)
				}
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		t.Logf("%s: steady state %d writes after the first in %.0f simulated min = %.1f writes/min (naive: 12/min), %d skipped, %d failed; "+
			"subscriber got %d pushes; metadata %d of %d chars; critical change -> subscriber p50 %v p99 %v (n=%d)",
			s.Kind, cnt.Writes-1, minutes, float64(cnt.Writes-1)/minutes, cnt.Skips, cnt.Failures, pushes,
			size, metadata.DefaultBudget, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), len(lat))
		if cnt.Failures != 0 {
			t.Fatalf("%d failed writes", cnt.Failures)
		}
	})
}

// TestMetadataBudget shows why the encoder keeps a budget: Java Nacos 2.3+
// rejects instance metadata over 1024 characters. The encoder's output for an
// oversized instance is accepted everywhere.
func TestMetadataBudget(t *testing.T) {
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		a := nacostest.Client(t, s)
		big := map[string]string{"loaded.models": strings.Repeat("m", 1100)}
		err := a.Register(nacosreg.Registration{Service: "ai-budget", IP: "127.0.0.1", Port: 19201, Enabled: true, Metadata: big})
		t.Logf("%s: raw 1111-character metadata: %v", s.Kind, errOrAccepted(err))
		if err == nil {
			_ = a.Deregister(nacosreg.Registration{Service: "ai-budget", IP: "127.0.0.1", Port: 19201})
		}
		var models []string
		for i := 0; i < 80; i++ {
			models = append(models, fmt.Sprintf("org/model-%02d-instruct", i))
		}
		in := metadata.Instance{Lifecycle: metadata.Active, Warm: metadata.Ready, InferenceHealthy: metadata.True,
			GPUHealthy: metadata.True, LoadedModels: models, UpdatedAt: metadata.IntOf(time.Now().Unix())}
		md := in.Encode()
		reg := nacosreg.Registration{Service: "ai-budget", IP: "127.0.0.1", Port: 19202, Enabled: true, Metadata: md}
		if err := a.Register(reg); err != nil {
			t.Fatalf("%s rejected the encoder's %d-character output: %v", s.Kind, metadata.Size(md), err)
		}
		_ = a.Deregister(reg)
	})
}

func errOrAccepted(err error) string {
	if err == nil {
		return "accepted"
	}
	return "rejected: " + err.Error()
}
