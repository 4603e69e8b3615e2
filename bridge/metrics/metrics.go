package metrics

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// LatencyBuckets are upper bounds in seconds that span what an inference
// service sees: a health probe answered in a millisecond, a short completion
// in tens of milliseconds, a long generation or a stream in minutes.
var LatencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Histogram counts durations into fixed buckets. Observe is one atomic add
// per bucket hit plus one for the sum, with no lock and no allocation, so it
// can sit on the proxy's request path. The zero value is not usable; call
// NewHistogram.
type Histogram struct {
	bounds []float64       // seconds, ascending
	limits []int64         // the same bounds in nanoseconds, for Observe
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumNS  atomic.Int64
}

// NewHistogram returns a histogram with the given upper bounds in seconds
// (nil means LatencyBuckets). The bounds are program constants, so bad ones
// (empty, unsorted, NaN or infinite) panic, as in client_golang.
func NewHistogram(bounds []float64) *Histogram {
	if bounds == nil {
		bounds = LatencyBuckets
	}
	if len(bounds) == 0 {
		panic("metrics: histogram needs at least one bucket")
	}
	h := &Histogram{bounds: append([]float64(nil), bounds...), limits: make([]int64, len(bounds)), counts: make([]atomic.Uint64, len(bounds)+1)}
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) || i > 0 && b <= bounds[i-1] {
			panic(fmt.Sprintf("metrics: histogram bounds must be finite and strictly ascending, got %v", bounds))
		}
		h.limits[i] = int64(b * float64(time.Second))
	}
	return h
}

// Observe records one duration. A negative duration (a clock step) counts
// as zero.
func (h *Histogram) Observe(d time.Duration) {
	ns := max(int64(d), 0)
	i := 0
	for i < len(h.limits) && ns > h.limits[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNS.Add(ns)
}

// Snapshot returns the histogram's state. Buckets are read one by one
// without a lock, so a snapshot taken under load may miss observations that
// landed meanwhile; Count is the sum of the buckets read, which keeps the
// exposition self-consistent (the +Inf bucket equals _count).
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Bounds: h.bounds, Cumulative: make([]uint64, len(h.bounds))}
	var n uint64
	for i := range h.bounds {
		n += h.counts[i].Load()
		s.Cumulative[i] = n
	}
	s.Count = n + h.counts[len(h.bounds)].Load()
	s.Sum = time.Duration(h.sumNS.Load()).Seconds()
	return s
}

// HistogramSnapshot is a histogram at one moment, in Prometheus terms.
type HistogramSnapshot struct {
	// Bounds are the bucket upper bounds in seconds (shared; do not modify).
	Bounds []float64
	// Cumulative[i] counts observations <= Bounds[i].
	Cumulative []uint64
	// Count is every observation, the +Inf bucket.
	Count uint64
	// Sum is the total of the observations in seconds.
	Sum float64
}

// Quantile estimates the q-quantile (0..1) by linear interpolation inside
// the bucket it falls in, as PromQL's histogram_quantile does. It returns 0
// with no observations and the largest bound when q falls in +Inf.
func (s HistogramSnapshot) Quantile(q float64) float64 {
	if s.Count == 0 {
		return 0
	}
	rank := q * float64(s.Count)
	lower, below := 0.0, uint64(0)
	for i, c := range s.Cumulative {
		if float64(c) >= rank {
			in := c - below
			if in == 0 {
				return s.Bounds[i]
			}
			return lower + (s.Bounds[i]-lower)*(rank-float64(below))/float64(in)
		}
		lower, below = s.Bounds[i], c
	}
	return s.Bounds[len(s.Bounds)-1]
}

// Labels is a Prometheus label set in the order given, as name/value pairs.
type Labels []string

// String renders the set as {a="x",b="y"}, or "" for none, escaping values
// as the text format requires (backslash, double quote, newline; other
// bytes as they are, which is not what strconv.Quote does).
func (l Labels) String() string {
	if len(l) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(l); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(l[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// Header writes the # HELP and # TYPE lines of a family; typ is counter,
// gauge or histogram. Write it once before the family's samples.
func Header(w io.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, helpEscaper.Replace(help), name, typ)
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// Sample writes one sample line.
func Sample(w io.Writer, name string, labels Labels, v float64) {
	fmt.Fprintf(w, "%s%s %s\n", name, labels, formatFloat(v))
}

// Gauge writes a whole gauge family with one unlabelled sample.
func Gauge(w io.Writer, name, help string, v float64) {
	Header(w, name, "gauge", help)
	Sample(w, name, nil, v)
}

// Counter writes a whole counter family with one unlabelled sample; name
// should end in _total.
func Counter(w io.Writer, name, help string, v float64) {
	Header(w, name, "counter", help)
	Sample(w, name, nil, v)
}

// WriteHistogram writes the _bucket, _sum and _count samples of one
// histogram series (the family's Header is the caller's, once).
func WriteHistogram(w io.Writer, name string, labels Labels, s HistogramSnapshot) {
	bucket := append(append(Labels(nil), labels...), "le", "")
	for i, b := range s.Bounds {
		bucket[len(bucket)-1] = formatFloat(b)
		fmt.Fprintf(w, "%s_bucket%s %d\n", name, bucket, s.Cumulative[i])
	}
	bucket[len(bucket)-1] = "+Inf"
	fmt.Fprintf(w, "%s_bucket%s %d\n", name, bucket, s.Count)
	fmt.Fprintf(w, "%s_sum%s %s\n", name, labels, formatFloat(s.Sum))
	fmt.Fprintf(w, "%s_count%s %d\n", name, labels, s.Count)
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
