package metadata

// Version is the schema version this package writes (key "schema").
const Version = 1

// Keys of schema v1. Every key the project reads or writes is declared here
// and nowhere else. "v1" marks the schema version that added the key; a later
// version may add keys but never changes the meaning of these.
const (
	KeySchema           = "schema"                // v1: schema version, integer
	KeyLifecycle        = "lifecycle"             // v1: REGISTERED | ACTIVE | DRAINING | STOPPED
	KeyWarmStatus       = "warm.status"           // v1: cold | warming | ready
	KeyWarmReason       = "warm.reason"           // v1: why the last warm-up failed (absent once ready)
	KeyInferenceHealthy = "inference.healthy"     // v1: true | false, from the inference probe
	KeyLatencyP50       = "inference.latency.p50" // v1: ms, integer
	KeyLatencyP95       = "inference.latency.p95" // v1: ms, integer
	KeyGPUModel         = "gpu.model"             // v1: most common GPU name of the instance
	KeyGPUMixed         = "gpu.mixed"             // v1: "true" when the instance has GPUs of several models
	KeyGPUCount         = "gpu.count"             // v1: integer
	KeyGPUMemTotal      = "gpu.memory.total"      // v1: MiB over all GPUs
	KeyGPUMemAvailable  = "gpu.memory.available"  // v1: MiB free over all GPUs
	KeyGPUUtil          = "gpu.util"              // v1: percent 0..100, smoothed
	KeyGPUHealthy       = "gpu.healthy"           // v1: false after a critical XID or uncorrectable ECC
	KeyLoadedModels     = "loaded.models"         // v1: comma-separated model ids; may end in "+N" (N more not listed)
	KeyModelVersion     = "model.version"         // v1: string
	KeyMaxConcurrent    = "max.concurrent"        // v1: integer
	KeyMaxTokens        = "max.tokens"            // v1: integer
	KeySupportedTasks   = "supported.tasks"       // v1: comma-separated, e.g. generation,embedding
	KeyInstanceWeight   = "instance.weight"       // v1: integer 0..10000
	KeyQueueDepth       = "queue.depth"           // v1: waiting requests, integer
	KeyInflight         = "inflight"              // v1: running requests, integer
	KeyKVCacheUsage     = "kv.cache.usage"        // v1: percent 0..100, when the engine reports it
	KeyLocales          = "locales"               // v1: comma-separated, e.g. zh_CN,en_US
	KeyRegion           = "region"                // v1: e.g. cn-east
	KeyConfigRev        = "config.rev"            // v1: short hash of the applied inference config
	KeyUpdatedAt        = "updated.at"            // v1: unix seconds of this write
)

// DefaultBudget is the default limit on the characters of keys plus values,
// Java Nacos 2.3+'s limit for instance metadata.
const DefaultBudget = 1024

// Field describes one key of the schema, for documentation and for readers
// that walk the schema (the README table is checked against this list).
type Field struct {
	Key     string
	Since   int
	Value   string
	Meaning string
}

// Fields lists every key of schema v1 in the order the README shows them.
var Fields = []Field{
	{KeySchema, 1, "`1`", "schema version"},
	{KeyLifecycle, 1, "`REGISTERED` / `ACTIVE` / `DRAINING` / `STOPPED`", "lifecycle state; only ACTIVE is routable"},
	{KeyWarmStatus, 1, "`cold` / `warming` / `ready`", "warm-up state"},
	{KeyWarmReason, 1, "string", "why the last warm-up failed; absent once ready"},
	{KeyInferenceHealthy, 1, "`true` / `false`", "result of the inference probe"},
	{KeyLatencyP50, 1, "integer ms", "inference latency p50"},
	{KeyLatencyP95, 1, "integer ms", "inference latency p95"},
	{KeyGPUModel, 1, "string", "GPU model (the most common one when mixed)"},
	{KeyGPUMixed, 1, "`true`", "present when the GPUs differ"},
	{KeyGPUCount, 1, "integer", "number of GPUs"},
	{KeyGPUMemTotal, 1, "integer MiB", "VRAM over all GPUs"},
	{KeyGPUMemAvailable, 1, "integer MiB", "free VRAM over all GPUs"},
	{KeyGPUUtil, 1, "integer 0..100", "GPU utilisation, smoothed"},
	{KeyGPUHealthy, 1, "`true` / `false`", "false after a critical XID or uncorrectable ECC"},
	{KeyLoadedModels, 1, "comma-separated ids, may end in `+N`", "models loaded; `+N` means N more not listed"},
	{KeyModelVersion, 1, "string", "model version"},
	{KeyMaxConcurrent, 1, "integer", "maximum concurrent requests"},
	{KeyMaxTokens, 1, "integer", "maximum tokens per request"},
	{KeySupportedTasks, 1, "comma-separated", "tasks served, e.g. `generation,embedding`"},
	{KeyInstanceWeight, 1, "integer 0..10000", "routing weight"},
	{KeyQueueDepth, 1, "integer", "requests waiting"},
	{KeyInflight, 1, "integer", "requests running"},
	{KeyKVCacheUsage, 1, "integer 0..100", "KV-cache usage, when the engine reports it"},
	{KeyLocales, 1, "comma-separated", "locales served, e.g. `zh_CN,en_US`"},
	{KeyRegion, 1, "string", "region, e.g. `cn-east`"},
	{KeyConfigRev, 1, "string", "short hash of the applied inference config"},
	{KeyUpdatedAt, 1, "integer unix seconds", "time of this write"},
}

// Lifecycle is the instance state machine's state as published.
type Lifecycle string

// Lifecycle states. The zero value means unknown (key absent or malformed).
const (
	Registered Lifecycle = "REGISTERED"
	Active     Lifecycle = "ACTIVE"
	Draining   Lifecycle = "DRAINING"
	Stopped    Lifecycle = "STOPPED"
)

// WarmStatus is the warm-up state as published; zero means unknown.
type WarmStatus string

// Warm statuses.
const (
	Cold    WarmStatus = "cold"
	Warming WarmStatus = "warming"
	Ready   WarmStatus = "ready"
)

// Tri is a boolean that can be unknown.
type Tri uint8

// Tri values; the zero value is Unknown.
const (
	Unknown Tri = iota
	True
	False
)

// TriOf converts a bool.
func TriOf(b bool) Tri {
	if b {
		return True
	}
	return False
}

// Int is an integer that can be unknown: Set is false when the key was
// absent or malformed, which is different from a known zero.
type Int struct {
	V   int64
	Set bool
}

// IntOf returns a known Int.
func IntOf(v int64) Int { return Int{V: v, Set: true} }

// Instance is the decoded metadata of one instance.
type Instance struct {
	Schema           Int
	Lifecycle        Lifecycle
	Warm             WarmStatus
	WarmReason       string
	InferenceHealthy Tri
	LatencyP50       Int // ms
	LatencyP95       Int // ms
	GPUModel         string
	GPUMixed         bool
	GPUCount         Int
	GPUMemTotal      Int // MiB
	GPUMemAvailable  Int // MiB
	GPUUtil          Int // percent
	GPUHealthy       Tri
	LoadedModels     []string
	// LoadedModelsMore counts models the writer had to leave out of
	// LoadedModels to fit the budget (the "+N" marker).
	LoadedModelsMore int
	ModelVersion     string
	MaxConcurrent    Int
	MaxTokens        Int
	SupportedTasks   []string
	Weight           Int // 0..10000
	QueueDepth       Int
	Inflight         Int
	KVCacheUsage     Int // percent
	Locales          []string
	Region           string
	ConfigRev        string
	UpdatedAt        Int // unix seconds
	// Extra holds keys this schema does not know. Decode puts unknown keys
	// here; Encode writes them (after the schema's keys, dropped first when
	// over budget).
	Extra map[string]string
}
