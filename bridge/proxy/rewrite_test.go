package proxy

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
)

func testConfig() *inferencecfg.Config {
	d := inferencecfg.Defaults // temperature 0.7, top-p 1, max-tokens 512
	big := d
	big.Temperature, big.TopP, big.MaxTokens = 0.2, 0.9, 4096
	return &inferencecfg.Config{
		Defaults:       d,
		MaxTokensLimit: 32768,
		Models:         map[string]inferencecfg.Params{"big": big},
	}
}

func TestRewriteBody(t *testing.T) {
	lowLimit := testConfig()
	lowLimit.MaxTokensLimit = 1000

	tests := []struct {
		name string
		cfg  *inferencecfg.Config // nil: testConfig()
		in   string
		want string // "" means unchanged
		out  outcome
	}{
		{
			name: "absent fields are appended after the last member",
			in:   `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.7,"top_p":1,"max_tokens":512}`,
			out:  filled,
		},
		{
			name: "present values within the cap are kept",
			in:   `{"model":"m","temperature":1.3,"top_p":0.5,"max_tokens":100}`,
			out:  unchanged,
		},
		{
			name: "per-model override",
			in:   `{"model":"big","prompt":"x"}`,
			want: `{"model":"big","prompt":"x","temperature":0.2,"top_p":0.9,"max_tokens":4096}`,
			out:  filled,
		},
		{
			name: "missing model gets the defaults",
			in:   `{"prompt":"x","temperature":0,"top_p":1}`,
			want: `{"prompt":"x","temperature":0,"top_p":1,"max_tokens":512}`,
			out:  filled,
		},
		{
			name: "non-string model gets the defaults",
			in:   `{"model":7,"temperature":0,"top_p":1}`,
			want: `{"model":7,"temperature":0,"top_p":1,"max_tokens":512}`,
			out:  filled,
		},
		{
			name: "max_tokens above the cap is clamped in place",
			in:   `{"max_tokens": 100000 ,"model":"m","temperature":1,"top_p":1}`,
			want: `{"max_tokens": 512 ,"model":"m","temperature":1,"top_p":1}`,
			out:  clamped,
		},
		{
			name: "per-model cap",
			in:   `{"model":"big","max_tokens":5000,"temperature":1,"top_p":1}`,
			want: `{"model":"big","max_tokens":4096,"temperature":1,"top_p":1}`,
			out:  clamped,
		},
		{
			name: "max-tokens-limit bounds the per-model cap",
			cfg:  lowLimit,
			in:   `{"model":"big","max_tokens":5000,"temperature":1,"top_p":1}`,
			want: `{"model":"big","max_tokens":1000,"temperature":1,"top_p":1}`,
			out:  clamped,
		},
		{
			name: "max-tokens-limit bounds the filled value",
			cfg:  lowLimit,
			in:   `{"model":"big","temperature":1,"top_p":1}`,
			want: `{"model":"big","temperature":1,"top_p":1,"max_tokens":1000}`,
			out:  filled,
		},
		{
			name: "max_completion_tokens is clamped and max_tokens not added",
			in:   `{"model":"m","max_completion_tokens":9999}`,
			want: `{"model":"m","max_completion_tokens":512,"temperature":0.7,"top_p":1}`,
			out:  clamped,
		},
		{
			name: "max_completion_tokens within the cap stands alone",
			in:   `{"model":"m","max_completion_tokens":100,"temperature":1,"top_p":1}`,
			out:  unchanged,
		},
		{
			name: "both limits clamped",
			in:   `{"max_tokens":600,"max_completion_tokens":700,"temperature":1,"top_p":1}`,
			want: `{"max_tokens":512,"max_completion_tokens":512,"temperature":1,"top_p":1}`,
			out:  clamped,
		},
		{
			name: "null counts as absent and is replaced in place",
			in:   `{"temperature":null,"model":"m","top_p":null,"max_tokens":null}`,
			want: `{"temperature":0.7,"model":"m","top_p":1,"max_tokens":512}`,
			out:  filled,
		},
		{
			name: "float and exponent token counts are clamped",
			in:   `{"max_tokens":1e6,"max_completion_tokens":512.5,"temperature":1,"top_p":1}`,
			want: `{"max_tokens":512,"max_completion_tokens":512,"temperature":1,"top_p":1}`,
			out:  clamped,
		},
		{
			name: "a string token count is the backend's to reject",
			in:   `{"max_tokens":"100000","temperature":1,"top_p":1}`,
			out:  unchanged,
		},
		{
			name: "escaped key is recognised",
			in:   `{"max\u005ftokens":99999,"temperature":1,"top_p":1}`,
			want: `{"max\u005ftokens":512,"temperature":1,"top_p":1}`,
			out:  clamped,
		},
		{
			name: "escaped model name",
			in:   `{"model":"\u0062ig","temperature":1,"top_p":1}`,
			want: `{"model":"\u0062ig","temperature":1,"top_p":1,"max_tokens":4096}`,
			out:  filled,
		},
		{
			name: "duplicate keys are all clamped",
			in:   `{"max_tokens":9000,"temperature":1,"top_p":1,"max_tokens":8000}`,
			want: `{"max_tokens":512,"temperature":1,"top_p":1,"max_tokens":512}`,
			out:  clamped,
		},
		{
			name: "whitespace, order, escapes and number spelling are preserved",
			in:   "{\n  \"stream\": true,\n  \"messages\": [{\"role\": \"user\", \"content\": \"<b>&amp; \\u00e9 \\\"q\\\" {]\"}],\n  \"n\": 1.50,\n  \"model\": \"m\"\n}\n",
			want: "{\n  \"stream\": true,\n  \"messages\": [{\"role\": \"user\", \"content\": \"<b>&amp; \\u00e9 \\\"q\\\" {]\"}],\n  \"n\": 1.50,\n  \"model\": \"m\",\"temperature\":0.7,\"top_p\":1,\"max_tokens\":512\n}\n",
			out:  filled,
		},
		{
			name: "empty object",
			in:   ` { } `,
			want: ` {"temperature":0.7,"top_p":1,"max_tokens":512 } `,
			out:  filled,
		},
		{name: "truncated JSON", in: `{"model":"m","max_tokens":`, out: malformed},
		{name: "trailing garbage", in: `{"model":"m"} x`, out: malformed},
		{name: "array", in: `[{"model":"m"}]`, out: malformed},
		{name: "null body", in: `null`, out: malformed},
		{name: "empty body", in: ``, out: malformed},
		{name: "form data", in: `model=m&max_tokens=1`, out: malformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg == nil {
				cfg = testConfig()
			}
			in := []byte(tt.in)
			got, out := rewriteBody(in, cfg)
			if out != tt.out {
				t.Errorf("outcome = %d, want %d", out, tt.out)
			}
			want := tt.want
			if want == "" {
				want = tt.in
				if len(in) > 0 && &got[0] != &in[0] {
					t.Errorf("unchanged body was copied")
				}
			}
			if string(got) != want {
				t.Errorf("body\n got %s\nwant %s", got, want)
			}
			if out != malformed && !json.Valid(got) {
				t.Errorf("result is not valid JSON: %s", got)
			}
		})
	}
}

// FuzzRewriteBody checks the invariants on any input: a body that is not a
// JSON object comes back untouched; otherwise the result is a valid object in
// which every member the rewrite does not own decodes to the same value, and
// temperature and top_p are set.
func FuzzRewriteBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[]}`, `{}`, `{"max_tokens":1e9}`, `{"model":"big","temperature":null}`,
		`{"a":"}\"{","b":[{"c":[]}],"max_completion_tokens":3}`, `[1]`, `"x"`, `{"max\u005ftokens":-1}`,
	} {
		f.Add([]byte(s))
	}
	cfg := testConfig()
	owned := map[string]bool{"temperature": true, "top_p": true, "max_tokens": true, "max_completion_tokens": true}
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		got, out := rewriteBody(in, cfg)
		if !bytes.Equal(in, orig) {
			t.Fatal("input modified")
		}
		if out == malformed || out == unchanged {
			if !bytes.Equal(got, in) {
				t.Fatalf("outcome %d but body changed: %q -> %q", out, in, got)
			}
			if out == malformed {
				return
			}
		}
		var a, b map[string]any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatalf("input %q accepted as an object: %v", in, err)
		}
		if err := json.Unmarshal(got, &b); err != nil {
			t.Fatalf("output %q is not an object: %v", got, err)
		}
		for k, v := range a {
			if owned[k] {
				continue
			}
			bv, _ := json.Marshal(b[k])
			av, _ := json.Marshal(v)
			if !bytes.Equal(av, bv) {
				t.Fatalf("member %q changed: %s -> %s", k, av, bv)
			}
		}
		for _, k := range []string{"temperature", "top_p"} {
			if b[k] == nil {
				t.Fatalf("%s not set in %q", k, got)
			}
		}
		if b["max_tokens"] == nil && b["max_completion_tokens"] == nil {
			t.Fatalf("no token limit in %q", got)
		}
	})
}

func TestLatencyRing(t *testing.T) {
	var r latencyRing
	if p50, p95, n := r.percentiles(); p50 != 0 || p95 != 0 || n != 0 {
		t.Fatalf("empty ring: %v %v %d", p50, p95, n)
	}
	for i := 1; i <= 100; i++ {
		r.record(msDuration(i))
	}
	p50, p95, n := r.percentiles()
	if p50 != msDuration(50) || p95 != msDuration(95) || n != 100 {
		t.Fatalf("got p50 %v p95 %v n %d", p50, p95, n)
	}
	// Overwrite the whole window with larger values: the old ones are gone.
	for i := 1; i <= LatencyWindow; i++ {
		r.record(msDuration(1000 + i))
	}
	p50, _, n = r.percentiles()
	if n != LatencyWindow || p50 != msDuration(1000+LatencyWindow/2) {
		t.Fatalf("after wrap: p50 %v n %d", p50, n)
	}
}

func msDuration(n int) time.Duration { return time.Duration(n) * time.Millisecond }
