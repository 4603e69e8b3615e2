package metadata

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// sample is a realistic instance: 8 GPUs, 5 loaded models.
func sample() Instance {
	return Instance{
		Lifecycle: Active, Warm: Ready, InferenceHealthy: True, GPUHealthy: True,
		LatencyP50: IntOf(180), LatencyP95: IntOf(640),
		GPUModel: "NVIDIA H100 80GB HBM3", GPUCount: IntOf(8),
		GPUMemTotal: IntOf(8 * 81559), GPUMemAvailable: IntOf(123456), GPUUtil: IntOf(65),
		LoadedModels: []string{"qwen2.5-7b-instruct", "qwen2.5-72b-instruct", "llama-3.1-8b-instruct", "bge-m3", "deepseek-r1-distill-qwen-32b"},
		ModelVersion: "2025.06.1", MaxConcurrent: IntOf(256), MaxTokens: IntOf(32768),
		SupportedTasks: []string{"generation", "embedding"}, Weight: IntOf(100),
		QueueDepth: IntOf(3), Inflight: IntOf(17), KVCacheUsage: IntOf(42),
		Locales: []string{"zh_CN", "en_US"}, Region: "cn-east", ConfigRev: "a1b2c3d4",
		UpdatedAt: IntOf(1764566400),
	}
}

func TestRoundTrip(t *testing.T) {
	in := sample()
	in.Extra = map[string]string{"team": "search", "preserved.by": "nacos"}
	m, rep, err := Encoder{}.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Shortened) != 0 {
		t.Fatalf("sample was shortened: %v", rep.Shortened)
	}
	if rep.Size != Size(m) || rep.Size > DefaultBudget {
		t.Fatalf("size %d (map %d), budget %d", rep.Size, Size(m), DefaultBudget)
	}
	t.Logf("8 GPUs, 5 models: %d of %d characters", rep.Size, DefaultBudget)
	out, drep := Decode(m)
	if !drep.OK() {
		t.Fatalf("decode errors: %v", drep.Errors)
	}
	in.Schema = IntOf(Version)
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

func TestSampleHasRoom(t *testing.T) {
	m := sample().Encode()
	if Size(m) > DefaultBudget*3/4 {
		t.Fatalf("real sample uses %d of %d characters: too little room", Size(m), DefaultBudget)
	}
}

func TestDecodeTolerates(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		check   func(Instance) bool
		nErrors int
	}{
		{"empty", map[string]string{}, func(i Instance) bool { return i.Lifecycle == "" && !i.LatencyP50.Set }, 0},
		{"plain nacos instance", map[string]string{"preserved.register.source": "SPRING_CLOUD"},
			func(i Instance) bool { return i.Extra["preserved.register.source"] == "SPRING_CLOUD" }, 0},
		{"lowercase lifecycle", map[string]string{KeyLifecycle: "active"}, func(i Instance) bool { return i.Lifecycle == Active }, 0},
		{"bad lifecycle", map[string]string{KeyLifecycle: "RUNNING"}, func(i Instance) bool { return i.Lifecycle == "" }, 1},
		{"bad warm", map[string]string{KeyWarmStatus: "hot"}, func(i Instance) bool { return i.Warm == "" }, 1},
		{"bad bool", map[string]string{KeyInferenceHealthy: "yes"}, func(i Instance) bool { return i.InferenceHealthy == Unknown }, 1},
		{"zero is known", map[string]string{KeyQueueDepth: "0"}, func(i Instance) bool { return i.QueueDepth.Set && i.QueueDepth.V == 0 }, 0},
		{"negative", map[string]string{KeyQueueDepth: "-3"}, func(i Instance) bool { return !i.QueueDepth.Set }, 1},
		{"not a number", map[string]string{KeyLatencyP95: "fast"}, func(i Instance) bool { return !i.LatencyP95.Set }, 1},
		{"decimal tolerated", map[string]string{KeyGPUUtil: "12.7"}, func(i Instance) bool { return i.GPUUtil == IntOf(12) }, 0},
		{"percent over 100", map[string]string{KeyKVCacheUsage: "140"}, func(i Instance) bool { return !i.KVCacheUsage.Set }, 1},
		{"NaN", map[string]string{KeyGPUUtil: "NaN"}, func(i Instance) bool { return !i.GPUUtil.Set }, 1},
		{"huge", map[string]string{KeyInflight: "99999999999999999999999"}, func(i Instance) bool { return !i.Inflight.Set }, 1},
		{"weight range", map[string]string{KeyInstanceWeight: "10001"}, func(i Instance) bool { return !i.Weight.Set }, 1},
		{"truncated models", map[string]string{KeyLoadedModels: "a,b,+3"},
			func(i Instance) bool {
				return reflect.DeepEqual(i.LoadedModels, []string{"a", "b"}) && i.LoadedModelsMore == 3
			}, 0},
		{"messy list", map[string]string{KeyLoadedModels: " a, ,b,,"}, func(i Instance) bool { return reflect.DeepEqual(i.LoadedModels, []string{"a", "b"}) }, 0},
		{"plus in the middle is a name", map[string]string{KeySupportedTasks: "+1,x"}, func(i Instance) bool { return len(i.SupportedTasks) == 2 }, 0},
		{"newer schema", map[string]string{KeySchema: "2", KeyLifecycle: "ACTIVE", "future.key": "x"},
			func(i Instance) bool { return i.Lifecycle == Active && i.Extra["future.key"] == "x" }, 0},
		{"one bad field keeps the rest", map[string]string{KeyLifecycle: "ACTIVE", KeyGPUUtil: "%%", KeyWarmStatus: "ready"},
			func(i Instance) bool { return i.Lifecycle == Active && i.Warm == Ready && !i.GPUUtil.Set }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rep := Decode(tt.in)
			if !tt.check(got) {
				t.Fatalf("decoded %+v", got)
			}
			if len(rep.Errors) != tt.nErrors {
				t.Fatalf("errors %v, want %d", rep.Errors, tt.nErrors)
			}
			for _, e := range rep.Errors {
				if !strings.HasPrefix(e.Error(), "metadata: "+e.Key+"=") {
					t.Fatalf("error text %q", e.Error())
				}
			}
		})
	}
}

func TestBudgetShortensInOrder(t *testing.T) {
	in := sample()
	for i := 0; i < 60; i++ {
		in.LoadedModels = append(in.LoadedModels, fmt.Sprintf("org/some-long-model-name-%02d-instruct", i))
	}
	m, rep, err := Encoder{}.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if Size(m) > DefaultBudget {
		t.Fatalf("size %d over budget", Size(m))
	}
	if len(rep.Shortened) != 1 || rep.Shortened[0] != KeyLoadedModels {
		t.Fatalf("shortened %v, want only loaded.models", rep.Shortened)
	}
	out, _ := Decode(m)
	if out.LoadedModelsMore == 0 || len(out.LoadedModels)+out.LoadedModelsMore != 65 {
		t.Fatalf("models %d listed + %d more, want 65 in all", len(out.LoadedModels), out.LoadedModelsMore)
	}
	if !reflect.DeepEqual(out.LoadedModels, in.LoadedModels[:len(out.LoadedModels)]) {
		t.Fatal("kept models are not the first ones")
	}
	// Everything else survived.
	if out.Region != "cn-east" || out.KVCacheUsage != IntOf(42) {
		t.Fatalf("other fields lost: %+v", out)
	}
}

func TestBudgetNeverDropsMandatory(t *testing.T) {
	in := sample()
	in.Extra = map[string]string{"x": strings.Repeat("y", 500)}
	for _, budget := range []int{1024, 400, 200, 120, 100} {
		m, _, err := Encoder{Budget: budget}.Encode(in)
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if Size(m) > budget {
			t.Fatalf("budget %d: size %d", budget, Size(m))
		}
		for _, k := range []string{KeySchema, KeyLifecycle, KeyWarmStatus, KeyInferenceHealthy, KeyGPUHealthy, KeyUpdatedAt} {
			if _, ok := m[k]; !ok {
				t.Fatalf("budget %d: mandatory %s dropped", budget, k)
			}
		}
	}
	if _, _, err := (Encoder{Budget: 30}).Encode(in); err == nil {
		t.Fatal("budget 30 cannot hold the mandatory keys; want ErrBudget")
	}
}

func TestExtraCannotOverrideSchemaKeys(t *testing.T) {
	in := sample()
	in.Extra = map[string]string{KeyLifecycle: "STOPPED"}
	if got := in.Encode()[KeyLifecycle]; got != "ACTIVE" {
		t.Fatalf("lifecycle %q", got)
	}
}

func TestCommaInItem(t *testing.T) {
	in := Instance{LoadedModels: []string{"a,b", "c"}}
	out, _ := Decode(in.Encode())
	if !reflect.DeepEqual(out.LoadedModels, []string{"a_b", "c"}) {
		t.Fatalf("%v", out.LoadedModels)
	}
}

func TestFieldsMatchKeys(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Fields {
		if seen[f.Key] {
			t.Fatalf("duplicate field %s", f.Key)
		}
		seen[f.Key] = true
	}
	// Every key the encoder writes is declared in Fields.
	in := sample()
	in.GPUMixed = true
	for k := range in.Encode() {
		if !seen[k] {
			t.Fatalf("encoder writes undeclared key %s", k)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(KeyLifecycle, "ACTIVE", KeyLoadedModels, "a,b,+3")
	f.Add(KeyGPUUtil, "1e309", KeyLatencyP50, "-0")
	f.Add("", "", KeySchema, "99")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		in, rep := Decode(map[string]string{k1: v1, k2: v2})
		for _, e := range rep.Errors {
			_ = e.Error()
		}
		// Whatever was read re-encodes within budget and decodes again.
		m, _, err := Encoder{}.Encode(in)
		if err != nil {
			t.Fatal(err)
		}
		if Size(m) > DefaultBudget {
			t.Fatalf("size %d", Size(m))
		}
		if _, rep2 := Decode(m); !rep2.OK() {
			t.Fatalf("re-decode of our own output failed: %v (from %q)", rep2.Errors, m)
		}
	})
}

func FuzzEncodeBudget(f *testing.F) {
	f.Add("qwen", 5, 40, "NVIDIA H100", "x", 1024)
	f.Fuzz(func(t *testing.T, model string, nModels, repeat int, gpu, extra string, budget int) {
		if nModels < 0 || nModels > 200 || repeat < 0 || repeat > 50 || budget < 0 || budget > 1<<16 {
			return
		}
		in := sample()
		in.GPUModel = gpu
		in.LoadedModels = nil
		for i := 0; i < nModels; i++ {
			in.LoadedModels = append(in.LoadedModels, strings.Repeat(model, repeat%5+1))
		}
		in.Extra = map[string]string{"e": strings.Repeat(extra, repeat)}
		m, _, err := Encoder{Budget: budget}.Encode(in)
		b := budget
		if b == 0 {
			b = DefaultBudget
		}
		if err == nil && Size(m) > b {
			t.Fatalf("size %d over budget %d", Size(m), b)
		}
		if err == nil {
			for _, k := range []string{KeyLifecycle, KeyWarmStatus, KeyInferenceHealthy} {
				if _, ok := m[k]; !ok {
					t.Fatalf("%s dropped", k)
				}
			}
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	in := sample()
	e := Encoder{}
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = e.Encode(in)
	}
}

// BenchmarkEncodeNaive is the baseline: the obvious map of strconv'd values,
// without a budget.
func BenchmarkEncodeNaive(b *testing.B) {
	in := sample()
	b.ReportAllocs()
	for b.Loop() {
		m := map[string]string{}
		m[KeySchema] = "1"
		m[KeyLifecycle] = string(in.Lifecycle)
		m[KeyWarmStatus] = string(in.Warm)
		m[KeyInferenceHealthy] = "true"
		m[KeyGPUHealthy] = "true"
		for _, kv := range []struct {
			k string
			v Int
		}{{KeyUpdatedAt, in.UpdatedAt}, {KeyLatencyP50, in.LatencyP50}, {KeyLatencyP95, in.LatencyP95}, {KeyGPUCount, in.GPUCount},
			{KeyGPUMemTotal, in.GPUMemTotal}, {KeyGPUMemAvailable, in.GPUMemAvailable}, {KeyGPUUtil, in.GPUUtil},
			{KeyMaxConcurrent, in.MaxConcurrent}, {KeyMaxTokens, in.MaxTokens}, {KeyInstanceWeight, in.Weight},
			{KeyQueueDepth, in.QueueDepth}, {KeyInflight, in.Inflight}, {KeyKVCacheUsage, in.KVCacheUsage}} {
			m[kv.k] = fmt.Sprint(kv.v.V)
		}
		m[KeyGPUModel] = in.GPUModel
		m[KeyLoadedModels] = strings.Join(in.LoadedModels, ",")
		m[KeySupportedTasks] = strings.Join(in.SupportedTasks, ",")
		m[KeyLocales] = strings.Join(in.Locales, ",")
		m[KeyModelVersion] = in.ModelVersion
		m[KeyRegion] = in.Region
		m[KeyConfigRev] = in.ConfigRev
	}
}

func BenchmarkDecode(b *testing.B) {
	m := sample().Encode()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Decode(m)
	}
}
