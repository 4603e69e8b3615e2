package backend

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseModels(t *testing.T) {
	cases := []struct {
		name  string
		parse func([]byte) ([]string, error)
		body  string
		want  []string // nil: want ErrMalformed
	}{
		{"openai", parseOpenAIModels, `{"object":"list","data":[{"id":"a"},{"id":""},{"id":"a"},{"id":"b"}]}`, []string{"a", "b"}},
		{"openai empty", parseOpenAIModels, `{"object":"list","data":[]}`, []string{}},
		{"openai no data", parseOpenAIModels, `{"object":"list"}`, nil},
		{"openai null", parseOpenAIModels, `null`, nil},
		{"openai wrong type", parseOpenAIModels, `{"data":{"id":"a"}}`, nil},
		{"triton", parseTritonIndex, `[{"name":"a","state":"READY"},{"name":"b","state":"UNLOADING"}]`, []string{"a"}},
		{"triton object", parseTritonIndex, `{"error":"failed to get index"}`, nil},
		{"triton null", parseTritonIndex, `null`, nil},
		{"ollama", parseOllamaModels, `{"models":[{"model":"m:1"},{"name":"n","model":"n"}]}`, []string{"m:1", "n"}},
		{"ollama none loaded", parseOllamaModels, `{"models":[]}`, []string{}},
		{"ollama no models", parseOllamaModels, `{}`, nil},
		{"any openai", parseAnyModels, `{"data":[{"id":"x"}]}`, []string{"x"}},
		{"any ollama", parseAnyModels, `{"models":[{"name":"y"}]}`, []string{"y"}},
		{"any strings", parseAnyModels, `["p","q"]`, []string{"p", "q"}},
		{"any objects", parseAnyModels, `[{"name":"r","state":"READY"},{"id":"s"},{"name":"t","state":"LOADING"}]`, []string{"r", "s"}},
		{"any number", parseAnyModels, `42`, nil},
		{"any mixed", parseAnyModels, `["a",1]`, nil},
		{"any other object", parseAnyModels, `{"items":[]}`, nil},
		{"any broken", parseAnyModels, `{"data":`, nil},
	}
	for _, c := range cases {
		got, err := c.parse([]byte(c.body))
		if c.want == nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: got %q, %v; want ErrMalformed", c.name, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestParseSlots(t *testing.T) {
	for body, want := range map[string]int64{
		`[]`: 0,
		`[{"id":0,"is_processing":true},{"id":1,"is_processing":false}]`: 1,
		`[{"id":0,"state":1},{"id":1,"state":0},{"id":2,"state":2}]`:     2,
	} {
		if n, err := parseSlots([]byte(body)); err != nil || n != want {
			t.Errorf("%s: %d, %v; want %d", body, n, err, want)
		}
	}
	for _, body := range []string{`{}`, `null`, `[{"id":0}]`, `[{"is_processing":"yes"}]`} {
		if _, err := parseSlots([]byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", body, err)
		}
	}
}

func TestReadLoad(t *testing.T) {
	s := spec{queue: []string{"q"}, running: []string{"r"}, kv: []string{"kv_new", "kv_old"}}
	cases := []struct {
		name string
		text string
		want load
		bad  bool
	}{
		{"sum and max", "r{m=\"a\"} 2\nr{m=\"b\"} 3.0\nq 1\nkv_new{e=\"0\"} 0.2\nkv_new{e=\"1\"} 0.7\n", load{1, 5, 0.7}, false},
		{"fallback name", "kv_old 0.4\n", load{Unknown, Unknown, 0.4}, false},
		{"new name wins", "kv_old 0.4\nkv_new 0.1\n", load{Unknown, Unknown, 0.1}, false},
		{"clamped", "kv_new 1.7\nq -3\nr 2.6\n", load{0, 3, 1}, false},
		{"counter accepted", "# TYPE r counter\nr 4\n", load{Unknown, 4, Unknown}, false},
		{"histogram refused", "# TYPE r histogram\nr_bucket{le=\"+Inf\"} 1\nr_count 1\nr_sum 1\n", load{}, true},
		{"NaN refused", "q NaN\n", load{}, true},
		{"Inf refused", "r +Inf\n", load{}, true},
		{"none present", "other 1\n", load{}, true},
		{"empty", "", load{}, true},
	}
	for _, c := range cases {
		mfs, err := parseMetrics([]byte(c.text))
		if err != nil {
			t.Fatalf("%s: parse: %v", c.name, err)
		}
		got, err := mfs.readLoad(s)
		if c.bad {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: %+v, %v; want ErrMalformed", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	if _, err := parseMetrics([]byte("x{ 1\n")); !errors.Is(err, ErrMalformed) {
		t.Errorf("broken labels: %v, want ErrMalformed", err)
	}
}

func seedFixtures(f *testing.F, pattern string) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*", pattern))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzParseMetrics: any bytes either fail with ErrMalformed or give load
// values in range, for every engine's metric names; never a panic.
func FuzzParseMetrics(f *testing.F) {
	seedFixtures(f, "*.txt")
	f.Add([]byte("# TYPE a gauge\na{b=\"c\"} 1e308\na{b=\"d\"} 1e308\n"))
	f.Add([]byte("# TYPE a summary\na{quantile=\"0.5\"} 1\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		mfs, err := parseMetrics(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		for name, s := range specs {
			if name == EngineHTTP || name == EngineOpenAI {
				s.queue, s.running, s.kv = []string{"a"}, []string{"app_inflight"}, []string{"app_kv_fraction"}
			}
			l, err := mfs.readLoad(s)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("%s: error without ErrMalformed: %v", name, err)
				}
				continue
			}
			if l.queue < Unknown || l.running < Unknown || math.IsNaN(l.kv) || l.kv != Unknown && (l.kv < 0 || l.kv > 1) {
				t.Fatalf("%s: out of range: %+v", name, l)
			}
		}
	})
}

// FuzzParseJSON: every JSON reader either fails with ErrMalformed or returns
// non-empty, distinct names; never a panic.
func FuzzParseJSON(f *testing.F) {
	seedFixtures(f, "*.json")
	f.Add([]byte(`["a","a",""]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, parse := range []func([]byte) ([]string, error){parseOpenAIModels, parseTritonIndex, parseOllamaModels, parseAnyModels} {
			names, err := parse(body)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("error without ErrMalformed: %v", err)
				}
				continue
			}
			seen := map[string]bool{}
			for _, n := range names {
				if n == "" || seen[n] {
					t.Fatalf("bad list %q", names)
				}
				seen[n] = true
			}
		}
		if n, err := parseSlots(body); err == nil && n < 0 {
			t.Fatalf("negative slot count %d", n)
		} else if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error without ErrMalformed: %v", err)
		}
	})
}
