package metrics

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestObserveBuckets(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	for _, tc := range []struct {
		d    time.Duration
		want []uint64 // cumulative, then count
	}{
		{0, []uint64{1, 1, 1, 1}},
		{-time.Second, []uint64{1, 1, 1, 1}},     // clock step counts as zero
		{time.Millisecond, []uint64{1, 1, 1, 1}}, // le is inclusive
		{time.Millisecond + 1, []uint64{0, 1, 1, 1}},
		{10 * time.Millisecond, []uint64{0, 1, 1, 1}},
		{50 * time.Millisecond, []uint64{0, 0, 1, 1}},
		{100 * time.Millisecond, []uint64{0, 0, 1, 1}},
		{time.Hour, []uint64{0, 0, 0, 1}},
	} {
		h := NewHistogram(bounds)
		h.Observe(tc.d)
		s := h.Snapshot()
		got := append(append([]uint64(nil), s.Cumulative...), s.Count)
		if !equal(got, tc.want) {
			t.Errorf("Observe(%v): buckets %v, want %v", tc.d, got, tc.want)
		}
		if want := max(tc.d, 0).Seconds(); math.Abs(s.Sum-want) > 1e-12 {
			t.Errorf("Observe(%v): sum %v, want %v", tc.d, s.Sum, want)
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNewHistogramRejectsBadBounds(t *testing.T) {
	for _, b := range [][]float64{{}, {0.1, 0.1}, {0.2, 0.1}, {math.NaN()}, {1, math.Inf(1)}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewHistogram(%v) did not panic", b)
				}
			}()
			NewHistogram(b)
		}()
	}
	if h := NewHistogram(nil); len(h.Snapshot().Bounds) != len(LatencyBuckets) {
		t.Fatal("nil bounds should mean LatencyBuckets")
	}
}

func TestQuantile(t *testing.T) {
	h := NewHistogram([]float64{0.1, 0.2, 0.4})
	if q := h.Snapshot().Quantile(0.5); q != 0 {
		t.Fatalf("empty histogram quantile %v, want 0", q)
	}
	for range 50 {
		h.Observe(50 * time.Millisecond) // (0, 0.1]
	}
	for range 50 {
		h.Observe(150 * time.Millisecond) // (0.1, 0.2]
	}
	s := h.Snapshot()
	for _, tc := range []struct{ q, want float64 }{
		{0.25, 0.05}, {0.5, 0.1}, {0.75, 0.15}, {1, 0.2},
	} {
		if got := s.Quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	h.Observe(time.Hour)
	if got := h.Snapshot().Quantile(1); got != 0.4 {
		t.Errorf("quantile in +Inf = %v, want the largest bound 0.4", got)
	}
}

func TestLabelsEscape(t *testing.T) {
	for _, tc := range []struct {
		l    Labels
		want string
	}{
		{nil, ""},
		{Labels{"a"}, ""},
		{Labels{"probe", "inference"}, `{probe="inference"}`},
		{Labels{"a", `x"y`, "b", `c\d`, "c", "1\n2", "d", "modèle"}, `{a="x\"y",b="c\\d",c="1\n2",d="modèle"}`},
	} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%q: got %s, want %s", []string(tc.l), got, tc.want)
		}
	}
}

// The exposition must parse with Prometheus' own parser and say what was
// observed, including awkward label values and help text.
func TestExpositionParses(t *testing.T) {
	h := NewHistogram(nil)
	for _, d := range []time.Duration{500 * time.Microsecond, 20 * time.Millisecond, 3 * time.Second, 10 * time.Minute} {
		h.Observe(d)
	}
	var buf bytes.Buffer
	Header(&buf, "x_seconds", "histogram", "Latency, with a \\ and a\nnewline.")
	WriteHistogram(&buf, "x_seconds", Labels{"probe", "in\"fer\\ence\n", "model", "qwen·7b"}, h.Snapshot())
	WriteHistogram(&buf, "x_seconds", Labels{"probe", "empty"}, NewHistogram(nil).Snapshot())
	Counter(&buf, "y_total", "A counter.", 3)
	Gauge(&buf, "z", "A gauge.", math.Inf(1))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, buf.String())
	}
	ms := fams["x_seconds"].GetMetric()
	if len(ms) != 2 {
		t.Fatalf("series %d, want 2", len(ms))
	}
	got := ms[0].GetHistogram()
	if ms[0].GetLabel()[0].GetValue() != "in\"fer\\ence\n" || got.GetSampleCount() != 4 || math.Abs(got.GetSampleSum()-603.0205) > 1e-9 {
		t.Fatalf("histogram read back wrong: %v", ms[0])
	}
	var atTen uint64
	for _, b := range got.GetBucket() {
		if b.GetUpperBound() == 10 {
			atTen = b.GetCumulativeCount()
		}
	}
	if atTen != 3 {
		t.Fatalf("le=10 bucket %d, want 3", atTen)
	}
	if fams["y_total"].GetMetric()[0].GetCounter().GetValue() != 3 || !math.IsInf(fams["z"].GetMetric()[0].GetGauge().GetValue(), 1) {
		t.Fatal("counter or gauge read back wrong")
	}
}

// Concurrent observers and a reader: nothing lost once they are done, and
// every snapshot is self-consistent (run with -race).
func TestConcurrent(t *testing.T) {
	h := NewHistogram(nil)
	var wg sync.WaitGroup
	var stop atomic.Bool
	wg.Go(func() {
		for !stop.Load() {
			s := h.Snapshot()
			for i := 1; i < len(s.Cumulative); i++ {
				if s.Cumulative[i] < s.Cumulative[i-1] || s.Count < s.Cumulative[i] {
					t.Error("snapshot not monotonic")
					return
				}
			}
		}
	})
	var writers sync.WaitGroup
	for g := range 4 {
		writers.Go(func() {
			for i := range 1000 {
				h.Observe(time.Duration(g*1000+i) * time.Millisecond)
			}
		})
	}
	writers.Wait()
	stop.Store(true)
	wg.Wait()
	if n := h.Snapshot().Count; n != 4000 {
		t.Fatalf("count %d, want 4000", n)
	}
}

// BenchmarkObserve is the cost Observe adds to a proxied request, against
// the single atomic add that a plain counter costs (the baseline).
func BenchmarkObserve(b *testing.B) {
	b.Run("baseline-atomic-add", func(b *testing.B) {
		var n atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n.Add(1)
			}
		})
	})
	b.Run("histogram", func(b *testing.B) {
		h := NewHistogram(nil)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			d := 30 * time.Millisecond
			for pb.Next() {
				h.Observe(d)
			}
		})
	})
}
