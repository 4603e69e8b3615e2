package bridge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/metrics"
)

// Checker is one health layer: liveness (the process answers) or readiness
// (model loaded, GPU usable, worker pool not exhausted). nil error = passing.
type Checker interface {
	Check(ctx context.Context) error
}

// CheckFunc adapts a function to Checker.
type CheckFunc func(ctx context.Context) error

// Check calls f.
func (f CheckFunc) Check(ctx context.Context) error { return f(ctx) }

// HTTPCheck passes when GET URL answers 2xx (or Status, when set).
type HTTPCheck struct {
	URL    string
	Status int
	Client *http.Client
}

// Check implements Checker.
func (h HTTPCheck) Check(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
	if err != nil {
		return err
	}
	resp, err := client(h.Client).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if h.Status != 0 && resp.StatusCode != h.Status || h.Status == 0 && resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s", h.URL, resp.Status)
	}
	return nil
}

// InferenceCheck is the inference probe: a fixed input with an output check
// and a latency bound. A live, ready process can still fail it (no VRAM,
// broken CUDA, a wedged worker), which is why it exists.
type InferenceCheck struct {
	URL         string
	Method      string // default POST
	Body        []byte
	ContentType string // default application/json
	// Expect checks the answer; default: 2xx.
	Expect func(status int, body []byte) error
	// MaxLatency fails a correct but too slow answer (0: no bound).
	MaxLatency time.Duration
	Client     *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Probe runs the inference and returns its latency.
func (p InferenceCheck) Probe(ctx context.Context) (time.Duration, error) {
	now := p.Now
	if now == nil {
		now = time.Now
	}
	method, ct := p.Method, p.ContentType
	if method == "" {
		method = http.MethodPost
	}
	if ct == "" {
		ct = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, p.URL, bytes.NewReader(p.Body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", ct)
	start := now()
	resp, err := client(p.Client).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	lat := now().Sub(start)
	if err != nil {
		return lat, err
	}
	if p.Expect != nil {
		err = p.Expect(resp.StatusCode, body)
	} else if resp.StatusCode/100 != 2 {
		err = fmt.Errorf("%s %s: %s", method, p.URL, resp.Status)
	}
	if err != nil {
		return lat, err
	}
	if p.MaxLatency > 0 && lat > p.MaxLatency {
		return lat, fmt.Errorf("inference took %v, bound %v", lat.Round(time.Millisecond), p.MaxLatency)
	}
	return lat, nil
}

func client(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return http.DefaultClient
}

// latencies keeps the last n latencies for p50/p95. Owned by one goroutine.
type latencies struct {
	buf  []time.Duration
	next int
	full bool
}

func newLatencies(n int) *latencies { return &latencies{buf: make([]time.Duration, n)} }

func (l *latencies) add(d time.Duration) {
	l.buf[l.next] = d
	l.next = (l.next + 1) % len(l.buf)
	if l.next == 0 {
		l.full = true
	}
}

// quantiles returns p50 and p95 in ms, or -1 with no sample.
func (l *latencies) quantiles() (p50, p95 int64) {
	n := l.next
	if l.full {
		n = len(l.buf)
	}
	if n == 0 {
		return -1, -1
	}
	s := append([]time.Duration(nil), l.buf[:n]...)
	slices.Sort(s)
	q := func(f float64) int64 { return s[min(int(f*float64(n)), n-1)].Milliseconds() }
	return q(0.5), q(0.95)
}

// Probe names: ProbeStats.Probe and the probe label of the admin metrics.
const (
	ProbeLiveness  = "liveness"
	ProbeReadiness = "readiness"
	ProbeInference = "inference"
)

const (
	probeLiveness = iota
	probeReadiness
	probeInference
	numProbes
)

var probeNames = [numProbes]string{ProbeLiveness, ProbeReadiness, ProbeInference}

// ProbeStats is one probe's record since the bridge was made.
type ProbeStats struct {
	Probe          string // ProbeLiveness, ProbeReadiness or ProbeInference
	Passed, Failed uint64
	// Latency is the duration of every run, passed or failed (a timeout
	// lands at ProbeTimeout).
	Latency metrics.HistogramSnapshot
}

// probeStats is written by the health cycle and read by the admin endpoint
// without the bridge's lock.
type probeStats struct {
	passed, failed atomic.Uint64
	hist           *metrics.Histogram
}

func (p *probeStats) record(d time.Duration, err error) {
	if err != nil {
		p.failed.Add(1)
	} else {
		p.passed.Add(1)
	}
	p.hist.Observe(d)
}

func (p *probeStats) snapshot(name string) ProbeStats {
	return ProbeStats{Probe: name, Passed: p.passed.Load(), Failed: p.failed.Load(), Latency: p.hist.Snapshot()}
}
