package metadata

import (
	"fmt"
	"strconv"
	"strings"
)

// FieldError is one key that could not be decoded.
type FieldError struct {
	Key    string
	Value  string
	Reason string
}

func (e FieldError) Error() string {
	return fmt.Sprintf("metadata: %s=%q: %s", e.Key, clip(e.Value), e.Reason)
}

func clip(v string) string {
	if len(v) > 40 {
		return v[:40] + "..."
	}
	return v
}

// DecodeReport lists what Decode could not use. An instance with problems is
// still usable: each bad field is simply unknown.
type DecodeReport struct {
	Errors []FieldError
	// NewerSchema is set when the writer used a schema version above Version:
	// the keys this package knows are still read.
	NewerSchema bool
}

// OK reports whether every known key decoded cleanly.
func (r DecodeReport) OK() bool { return len(r.Errors) == 0 }

// Bounds for integers read from peers. Anything outside is garbage, not a
// signal, and is treated as unknown.
const (
	maxLatencyMS = 24 * 3600 * 1000
	maxCount     = 1 << 20
	maxMiB       = 1 << 40
)

// Decode reads metadata written by any version of the bridge, or by hand. It
// never fails as a whole: each malformed value is reported and left unknown,
// and keys the schema does not know go to Instance.Extra.
func Decode(m map[string]string) (Instance, DecodeReport) {
	var in Instance
	var rep DecodeReport
	bad := func(k, v, why string) { rep.Errors = append(rep.Errors, FieldError{k, v, why}) }
	num := func(k, v string, lo, hi int64) Int {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			// Tolerate writers that emit decimals ("12.5"): round towards zero.
			f, ferr := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if ferr != nil || f != f || f < float64(lo) || f > float64(hi) {
				bad(k, v, "not an integer")
				return Int{}
			}
			n = int64(f)
		}
		if n < lo || n > hi {
			bad(k, v, fmt.Sprintf("out of range %d..%d", lo, hi))
			return Int{}
		}
		return IntOf(n)
	}
	tri := func(k, v string) Tri {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return True
		case "false":
			return False
		}
		bad(k, v, "want true or false")
		return Unknown
	}
	for k, v := range m {
		switch k {
		case KeySchema:
			in.Schema = num(k, v, 1, 1<<16)
			rep.NewerSchema = in.Schema.Set && in.Schema.V > Version
		case KeyLifecycle:
			switch l := Lifecycle(strings.ToUpper(strings.TrimSpace(v))); l {
			case Registered, Active, Draining, Stopped:
				in.Lifecycle = l
			default:
				bad(k, v, "want REGISTERED, ACTIVE, DRAINING or STOPPED")
			}
		case KeyWarmStatus:
			switch w := WarmStatus(strings.ToLower(strings.TrimSpace(v))); w {
			case Cold, Warming, Ready:
				in.Warm = w
			default:
				bad(k, v, "want cold, warming or ready")
			}
		case KeyWarmReason:
			in.WarmReason = strings.TrimSpace(v)
		case KeyInferenceHealthy:
			in.InferenceHealthy = tri(k, v)
		case KeyGPUHealthy:
			in.GPUHealthy = tri(k, v)
		case KeyLatencyP50:
			in.LatencyP50 = num(k, v, 0, maxLatencyMS)
		case KeyLatencyP95:
			in.LatencyP95 = num(k, v, 0, maxLatencyMS)
		case KeyGPUModel:
			in.GPUModel = strings.TrimSpace(v)
		case KeyGPUMixed:
			in.GPUMixed = tri(k, v) == True
		case KeyGPUCount:
			in.GPUCount = num(k, v, 0, 4096)
		case KeyGPUMemTotal:
			in.GPUMemTotal = num(k, v, 0, maxMiB)
		case KeyGPUMemAvailable:
			in.GPUMemAvailable = num(k, v, 0, maxMiB)
		case KeyGPUUtil:
			in.GPUUtil = num(k, v, 0, 100)
		case KeyLoadedModels:
			in.LoadedModels, in.LoadedModelsMore = splitList(v)
		case KeyModelVersion:
			in.ModelVersion = strings.TrimSpace(v)
		case KeyMaxConcurrent:
			in.MaxConcurrent = num(k, v, 0, maxCount)
		case KeyMaxTokens:
			in.MaxTokens = num(k, v, 0, 1<<30)
		case KeySupportedTasks:
			in.SupportedTasks, _ = splitList(v)
		case KeyInstanceWeight:
			in.Weight = num(k, v, 0, 10000)
		case KeyQueueDepth:
			in.QueueDepth = num(k, v, 0, maxCount)
		case KeyInflight:
			in.Inflight = num(k, v, 0, maxCount)
		case KeyKVCacheUsage:
			in.KVCacheUsage = num(k, v, 0, 100)
		case KeyLocales:
			in.Locales, _ = splitList(v)
		case KeyRegion:
			in.Region = strings.TrimSpace(v)
		case KeyConfigRev:
			in.ConfigRev = strings.TrimSpace(v)
		case KeyUpdatedAt:
			in.UpdatedAt = num(k, v, 0, 1<<40)
		default:
			if in.Extra == nil {
				in.Extra = make(map[string]string)
			}
			in.Extra[k] = v
		}
	}
	return in, rep
}

// splitList splits a comma-separated list, dropping empty items and reading
// a trailing "+N" marker as the count of items left out.
func splitList(v string) ([]string, int) {
	if strings.TrimSpace(v) == "" {
		return nil, 0
	}
	parts := strings.Split(v, ",")
	out := parts[:0]
	more := 0
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if i == len(parts)-1 && len(p) > 1 && p[0] == '+' {
			if n, err := strconv.Atoi(p[1:]); err == nil && n > 0 {
				more = n
				continue
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, more
	}
	return out, more
}

// HasModel reports whether the instance lists model id; unsure is true when
// the list was truncated ("+N"), so an unlisted model may still be loaded.
func (in Instance) HasModel(id string) (has, unsure bool) {
	for _, m := range in.LoadedModels {
		if m == id {
			return true, false
		}
	}
	return false, in.LoadedModelsMore > 0
}

// HasTask reports whether the instance lists task.
func (in Instance) HasTask(task string) bool {
	for _, t := range in.SupportedTasks {
		if t == task {
			return true
		}
	}
	return false
}
