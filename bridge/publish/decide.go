package publish

import (
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
)

// Policy tunes when writes happen.
type Policy struct {
	// MinInterval is the least time between two writes caused by signal
	// changes (default 2 s). Critical changes ignore it.
	MinInterval time.Duration
	// Heartbeat is the most time between two writes (default 30 s).
	Heartbeat time.Duration
}

// WithDefaults fills zero fields.
func (p Policy) WithDefaults() Policy {
	if p.MinInterval <= 0 {
		p.MinInterval = 2 * time.Second
	}
	if p.Heartbeat <= 0 {
		p.Heartbeat = 30 * time.Second
	}
	return p
}

// Reason says why Decide chose to write.
type Reason string

// Reasons.
const (
	ReasonNone      Reason = ""
	ReasonFirst     Reason = "first"
	ReasonCritical  Reason = "critical"
	ReasonSignals   Reason = "signals"
	ReasonHeartbeat Reason = "heartbeat"
	ReasonRetry     Reason = "retry"
)

// State is what was last written, for Decide.
type State struct {
	Written   bool
	Last      metadata.Instance // quantised, as written
	Enabled   bool
	LastWrite time.Time
	// Failed marks that the last attempt failed: the next Decide writes.
	Failed bool
}

// Decide says whether desired (already quantised) must be written now.
func Decide(p Policy, st State, desired metadata.Instance, enabled bool, now time.Time) Reason {
	p = p.WithDefaults()
	switch {
	case !st.Written:
		return ReasonFirst
	case st.Failed:
		return ReasonRetry
	case enabled != st.Enabled || critical(st.Last, desired):
		return ReasonCritical
	case now.Sub(st.LastWrite) >= p.Heartbeat:
		return ReasonHeartbeat
	case signalsDiffer(st.Last, desired) && now.Sub(st.LastWrite) >= p.MinInterval:
		return ReasonSignals
	}
	return ReasonNone
}

// critical reports a change that routing decisions depend on.
func critical(a, b metadata.Instance) bool {
	return a.Lifecycle != b.Lifecycle || a.Warm != b.Warm || a.WarmReason != b.WarmReason ||
		a.InferenceHealthy != b.InferenceHealthy || a.GPUHealthy != b.GPUHealthy ||
		!slices.Equal(a.LoadedModels, b.LoadedModels) || a.LoadedModelsMore != b.LoadedModelsMore ||
		!slices.Equal(a.SupportedTasks, b.SupportedTasks) ||
		a.MaxConcurrent != b.MaxConcurrent || a.MaxTokens != b.MaxTokens || a.Weight != b.Weight ||
		a.ConfigRev != b.ConfigRev || a.ModelVersion != b.ModelVersion ||
		a.GPUModel != b.GPUModel || a.GPUCount != b.GPUCount || a.GPUMemTotal != b.GPUMemTotal ||
		!slices.Equal(a.Locales, b.Locales) || a.Region != b.Region
}

// signalsDiffer compares the noisy signals (already quantised).
func signalsDiffer(a, b metadata.Instance) bool {
	return a.GPUMemAvailable != b.GPUMemAvailable || a.GPUUtil != b.GPUUtil ||
		a.LatencyP50 != b.LatencyP50 || a.LatencyP95 != b.LatencyP95 ||
		a.QueueDepth != b.QueueDepth || a.Inflight != b.Inflight || a.KVCacheUsage != b.KVCacheUsage
}

// Quantize snaps the noisy signals of raw to coarse values, keeping the
// previously written value while the raw value stays within one step of it
// (hysteresis), so noise around a constant load does not cause writes.
// prev is the last written instance (zero before the first write).
func Quantize(prev, raw metadata.Instance) metadata.Instance {
	out := raw
	if raw.GPUMemAvailable.Set && raw.GPUMemTotal.Set && raw.GPUMemTotal.V > 0 {
		step := max(raw.GPUMemTotal.V/100, 1) // ~1% of total
		out.GPUMemAvailable = linear(prev.GPUMemAvailable, raw.GPUMemAvailable, step)
	}
	out.GPUUtil = linear(prev.GPUUtil, raw.GPUUtil, 5)
	out.KVCacheUsage = linear(prev.KVCacheUsage, raw.KVCacheUsage, 5)
	out.LatencyP50 = logBucket(prev.LatencyP50, raw.LatencyP50)
	out.LatencyP95 = logBucket(prev.LatencyP95, raw.LatencyP95)
	out.QueueDepth = smallBucket(prev.QueueDepth, raw.QueueDepth)
	out.Inflight = smallBucket(prev.Inflight, raw.Inflight)
	return out
}

// linear rounds to a multiple of step; it keeps prev while |raw-prev| < step.
func linear(prev, raw metadata.Int, step int64) metadata.Int {
	if !raw.Set {
		return raw
	}
	if prev.Set && abs(raw.V-prev.V) < step {
		return prev
	}
	return metadata.IntOf((raw.V + step/2) / step * step)
}

// logBucket snaps a latency to ~10% buckets (powers of 1.1), keeping prev
// while raw stays within 1.5 buckets (~15%) of it: a snapped value can sit at
// the edge of the noise band, so a one-bucket band would still flap.
func logBucket(prev, raw metadata.Int) metadata.Int {
	if !raw.Set {
		return raw
	}
	if raw.V <= 10 { // below 10 ms, 1 ms resolution is already fine
		if prev.Set && prev.V <= 10 && abs(raw.V-prev.V) <= 1 {
			return prev
		}
		return raw
	}
	if prev.Set && prev.V > 0 {
		r := float64(raw.V) / float64(prev.V)
		if r < latencyBand && r > 1/latencyBand {
			return prev
		}
	}
	b := math.Round(math.Log(float64(raw.V)) / math.Log(1.1))
	return metadata.IntOf(int64(math.Round(math.Pow(1.1, b))))
}

// latencyBand is 1.1^1.5.
var latencyBand = math.Pow(1.1, 1.5)

// smallBucket snaps queue depth and in-flight counts to 0, 1, 2, 4, 8, ...
// (nearest power of two, ties down) and keeps prev while raw stays within
// the neighbouring buckets of it: a count has to double or halve to move.
func smallBucket(prev, raw metadata.Int) metadata.Int {
	if !raw.Set {
		return raw
	}
	v := max(raw.V, 0)
	if prev.Set {
		lo, hi := prev.V/2, prev.V*2
		if prev.V <= 1 {
			lo, hi = 0, prev.V+1
		}
		if v >= lo && v <= hi {
			return prev
		}
	}
	if v <= 2 {
		return metadata.IntOf(v)
	}
	p := int64(1) << (63 - bits.LeadingZeros64(uint64(v))) // largest power of two <= v
	if v-p > 2*p-v {
		p *= 2
	}
	return metadata.IntOf(p)
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
