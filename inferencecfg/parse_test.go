package inferencecfg

import (
	"errors"
	"strings"
	"testing"
)

const example = `
inference:
  temperature: 0.7          # 0..2
  top-p: 0.9
  max-tokens: 512
  confidence-threshold: 0.85
  batch-size: 16
  timeout-ms: 5000
  retry-count: 2
  models:
    qwen2.5-7b-instruct:
      max-tokens: 2048
`

func TestParseExample(t *testing.T) {
	c, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if c.Defaults.TopP != 0.9 || c.Defaults.TimeoutMS != 5000 {
		t.Fatalf("%+v", c.Defaults)
	}
	q := c.For("qwen2.5-7b-instruct")
	if q.MaxTokens != 2048 || q.Temperature != 0.7 || q.TopP != 0.9 {
		t.Fatalf("override not layered on defaults: %+v", q)
	}
	if c.For("other") != c.Defaults {
		t.Fatal("unknown model must get the defaults")
	}
	if len(c.Rev) != 8 {
		t.Fatalf("rev %q", c.Rev)
	}
}

func TestRevisionIsNormalised(t *testing.T) {
	a, _ := Parse([]byte(example))
	b, err := Parse([]byte(`{"inference": {"models": {"qwen2.5-7b-instruct": {"max-tokens": 2048.0}}, "retry-count": 2, "timeout-ms": 5000,
	  "batch-size": 16, "confidence-threshold": 0.85, "max-tokens": 512, "top-p": 0.9, "temperature": 0.70}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Rev != b.Rev {
		t.Fatalf("same meaning, different rev: %s vs %s", a.Rev, b.Rev)
	}
	c, _ := Parse([]byte(strings.Replace(example, "0.85", "0.8", 1)))
	if c.Rev == a.Rev {
		t.Fatal("different value, same rev")
	}
	if got := Keys(a, c); len(got) != 2 || got[0] != "inference.confidence-threshold" || got[1] != "inference.models.qwen2.5-7b-instruct.confidence-threshold" {
		t.Fatalf("changed keys %v", got)
	}
}

func TestDefaultsApplied(t *testing.T) {
	c, err := Parse([]byte("inference:\n  temperature: 0.2\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults
	want.Temperature = 0.2
	if c.Defaults != want || c.MaxTokensLimit != DefaultMaxTokensLimit {
		t.Fatalf("%+v", c)
	}
	if DefaultConfig().Rev == c.Rev {
		t.Fatal("rev must differ from the built-in defaults")
	}
}

func TestRejections(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // substrings, one problem each, in order
	}{
		{"below minimum in a model", "inference:\n  models:\n    qwen2.5-7b-instruct:\n      max-tokens: 0\n",
			[]string{"inference.models.qwen2.5-7b-instruct.max-tokens: 0 is below the minimum 1"}},
		{"above maximum", "inference:\n  temperature: 2.5\n", []string{"inference.temperature: 2.5 is above the maximum 2"}},
		{"top-p zero", "inference:\n  top-p: 0\n", []string{"inference.top-p: 0 must be greater than 0"}},
		{"over max-tokens-limit", "inference:\n  max-tokens-limit: 4096\n  max-tokens: 8192\n", []string{"inference.max-tokens: 8192 is above max-tokens-limit 4096"}},
		{"unknown key with suggestion", "inference:\n  max_tokens: 10\n", []string{"inference.max_tokens: unknown key; did you mean max-tokens?"}},
		{"typo", "inference:\n  temprature: 1\n", []string{"inference.temprature: unknown key; did you mean temperature?"}},
		{"unknown key in a model", "inference:\n  models:\n    m:\n      topP: 0.5\n", []string{"inference.models.m.topP: unknown key; did you mean top-p?"}},
		{"unknown top-level key", "inferense:\n  temperature: 1\n", []string{"inferense: unknown key; did you mean inference?"}},
		{"nothing close", "inference:\n  colour: blue\n", []string{"inference.colour: unknown key; known keys are"}},
		{"wrong type", "inference:\n  temperature: hot\n", []string{`inference.temperature: "hot" is not a number`}},
		{"float for int", "inference:\n  batch-size: 1.5\n", []string{`inference.batch-size: "1.5" is not an integer`}},
		{"list for number", "inference:\n  batch-size: [1, 2]\n", []string{"inference.batch-size: want a number, got a list"}},
		{"null value", "inference:\n  batch-size:\n", []string{"inference.batch-size: want a number, got nothing (null)"}},
		{"NaN", "inference:\n  temperature: .nan\n", []string{`inference.temperature: ".nan" is not a number`}},
		{"duplicate key", "inference:\n  temperature: 1\n  temperature: 0.5\n", []string{"inference.temperature: duplicate key (line 3)"}},
		{"empty", "", []string{"empty document"}},
		{"only a comment", "# nothing\n", []string{"empty document"}},
		{"not a mapping", "- a\n- b\n", []string{"document must be a mapping"}},
		{"not YAML", "inference: [unclosed\n", []string{"not valid YAML"}},
		{"missing inference", "{}", []string{"missing the 'inference' key"}},
		{"models not a mapping", "inference:\n  models: 3\n", []string{"inference.models: must be a mapping"}},
		{"too deep", "inference:\n  models:\n    m:\n      a:\n        b:\n          c:\n            d:\n              e: 1\n", []string{"nests"}},
		{"every problem is listed", "inference:\n  temperature: 9\n  retry-count: 7\n  foo: 1\n",
			[]string{"inference.foo: unknown key"}}, // structure first; ranges once the structure is clean
		{"ranges listed together", "inference:\n  temperature: 9\n  retry-count: 7\n",
			[]string{"inference.temperature: 9 is above the maximum 2", "inference.retry-count: 7 is above the maximum 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("accepted: %+v", c)
			}
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error %T", err)
			}
			if len(ps) != len(tt.want) {
				t.Fatalf("problems %q, want %d", ps, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(ps[i].String(), w) {
					t.Fatalf("problem %d = %q, want it to contain %q", i, ps[i], w)
				}
			}
		})
	}
}

func TestOversized(t *testing.T) {
	doc := "inference:\n  temperature: 1\n#" + strings.Repeat("x", MaxDocumentBytes)
	if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "over the 65536-byte limit") {
		t.Fatalf("err %v", err)
	}
}

func TestAliasesResolve(t *testing.T) {
	c, err := Parse([]byte("inference:\n  max-tokens: &m 1024\n  models:\n    a:\n      max-tokens: *m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.For("a").MaxTokens != 1024 {
		t.Fatalf("%+v", c.For("a"))
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte("inference: {models: {a: {max-tokens: 1}}}"))
	f.Add([]byte("inference:\n  temperature: &a [*a]\n"))
	f.Add([]byte("{\"inference\": {\"temperature\": 1e400}}"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := Parse(doc)
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			if len(err.Error()) == 0 {
				t.Fatal("empty error")
			}
			return
		}
		// Anything accepted is within range and has a revision.
		for _, p := range append([]Params{c.Defaults}, values(c.Models)...) {
			if p.Temperature < 0 || p.Temperature > 2 || p.TopP <= 0 || p.TopP > 1 || p.MaxTokens < 1 ||
				p.MaxTokens > c.MaxTokensLimit || p.BatchSize < 1 || p.BatchSize > 1024 || p.RetryCount < 0 || p.RetryCount > 5 {
				t.Fatalf("accepted out-of-range params %+v", p)
			}
		}
		if len(c.Rev) != 8 {
			t.Fatalf("rev %q", c.Rev)
		}
	})
}

func values(m map[string]Params) []Params {
	out := make([]Params, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
