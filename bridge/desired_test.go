package bridge

import (
	"testing"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/gpu"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
)

func TestDesiredBuild(t *testing.T) {
	d := &Desired{}
	st := Static{Models: []string{"m"}, MaxConcurrent: 64, Weight: 20000, Tasks: []string{"generation"}}
	live := Live{Lifecycle: metadata.Active, Warm: metadata.Ready, InferenceHealthy: metadata.True,
		LatencyP50MS: 120, LatencyP95MS: -1, QueueDepth: 0, Inflight: -1, KVCacheUsage: -1, ConfigRev: "abcd1234"}
	snap := gpu.Snapshot{Source: gpu.SourceNVML, Healthy: true, Devices: []gpu.Device{
		{Name: "NVIDIA L4", MemTotal: 24 << 30, MemFree: 12 << 30, MemKnown: true, Util: 100},
	}}
	in := d.Build(st, live, snap)
	if in.GPUModel != "NVIDIA L4" || in.GPUMemTotal != metadata.IntOf(24576) || in.GPUMemAvailable != metadata.IntOf(12288) {
		t.Fatalf("gpu fields %+v", in)
	}
	if in.LatencyP95.Set || in.Inflight.Set || !in.QueueDepth.Set || in.Weight != metadata.IntOf(10000) {
		t.Fatalf("unknowns/clamps %+v", in)
	}
	if in.GPUUtil != metadata.IntOf(100) {
		t.Fatalf("first util sample %+v", in.GPUUtil)
	}
	snap.Devices[0].Util = 0
	if in = d.Build(st, live, snap); in.GPUUtil != metadata.IntOf(70) {
		t.Fatalf("EMA: util %+v, want 70", in.GPUUtil)
	}
	// No GPU: no GPU fields, and GPU health stays meaningful.
	in = d.Build(st, live, gpu.Snapshot{Source: gpu.SourceNone, Healthy: true})
	if in.GPUModel != "" || in.GPUCount.Set || in.GPUHealthy != metadata.True {
		t.Fatalf("no-GPU instance %+v", in)
	}
	m := in.Encode()
	if _, ok := m[metadata.KeyGPUModel]; ok {
		t.Fatal("gpu.model published for a host without GPU")
	}
}
