package bridge

import (
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/gpu"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
)

// Static is what an instance says about itself that does not change with
// load: from the bridge config, or from the backend's model list.
type Static struct {
	Models        []string
	ModelVersion  string
	MaxConcurrent int
	MaxTokens     int
	Tasks         []string
	Weight        int // 0 means unset
	Locales       []string
	Region        string
}

// Live is the instance's state and load at one health cycle.
type Live struct {
	Lifecycle        metadata.Lifecycle
	Warm             metadata.WarmStatus
	WarmReason       string
	InferenceHealthy metadata.Tri
	LatencyP50MS     int64 // <0 unknown
	LatencyP95MS     int64 // <0 unknown
	QueueDepth       int64 // <0 unknown
	Inflight         int64 // <0 unknown
	KVCacheUsage     int64 // percent, <0 unknown
	ConfigRev        string
}

// Desired builds the metadata an instance should publish from its static
// facts, its live state and a GPU sample. It keeps the utilisation EMA, so
// one Desired belongs to one instance and one goroutine.
type Desired struct {
	// Alpha is the EMA weight of a new utilisation sample (default 0.3:
	// with a 5 s cycle, a step change is ~80% visible after 20 s).
	Alpha float64
	util  float64
	has   bool
}

// Build returns the desired metadata (not yet quantised: the publisher does
// that against what it last wrote).
func (d *Desired) Build(st Static, live Live, snap gpu.Snapshot) metadata.Instance {
	known := func(v int64) metadata.Int {
		if v < 0 {
			return metadata.Int{}
		}
		return metadata.IntOf(v)
	}
	positive := func(v int) metadata.Int {
		if v <= 0 {
			return metadata.Int{}
		}
		return metadata.IntOf(int64(v))
	}
	in := metadata.Instance{
		Lifecycle: live.Lifecycle, Warm: live.Warm, WarmReason: live.WarmReason, InferenceHealthy: live.InferenceHealthy,
		LatencyP50: known(live.LatencyP50MS), LatencyP95: known(live.LatencyP95MS),
		QueueDepth: known(live.QueueDepth), Inflight: known(live.Inflight), KVCacheUsage: known(live.KVCacheUsage),
		ConfigRev: live.ConfigRev, LoadedModels: st.Models, ModelVersion: st.ModelVersion,
		MaxConcurrent: positive(st.MaxConcurrent), MaxTokens: positive(st.MaxTokens), SupportedTasks: st.Tasks,
		Locales: st.Locales, Region: st.Region, GPUHealthy: metadata.TriOf(snap.Healthy),
	}
	if st.Weight > 0 {
		in.Weight = metadata.IntOf(int64(min(st.Weight, 10000)))
	}
	if len(snap.Devices) == 0 {
		return in // no GPU fields at all: CPU backend, or NVML unavailable without static facts
	}
	sum := gpu.Summarize(snap)
	in.GPUModel, in.GPUMixed, in.GPUCount = sum.Model, sum.Mixed, metadata.IntOf(int64(sum.Count))
	if sum.MemTotalMiB > 0 {
		in.GPUMemTotal = metadata.IntOf(sum.MemTotalMiB)
	}
	if sum.MemFreeMiB >= 0 {
		in.GPUMemAvailable = metadata.IntOf(sum.MemFreeMiB)
	}
	if sum.UtilPercent >= 0 {
		a := d.Alpha
		if a <= 0 || a > 1 {
			a = 0.3
		}
		if !d.has {
			d.util, d.has = float64(sum.UtilPercent), true
		} else {
			d.util = a*float64(sum.UtilPercent) + (1-a)*d.util
		}
		in.GPUUtil = metadata.IntOf(int64(d.util + 0.5))
	}
	return in
}
