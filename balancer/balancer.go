package balancer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

// ErrNoEndpoint is returned (wrapped in *NoEndpointError) when no endpoint
// passes the filters.
var ErrNoEndpoint = errors.New("balancer: no endpoint")

// NoEndpointError says why no endpoint could be picked.
type NoEndpointError struct {
	Service string
	Reason  string
}

func (e *NoEndpointError) Error() string {
	return fmt.Sprintf("balancer: %s: no endpoint: %s", e.Service, e.Reason)
}

// Is makes errors.Is(err, ErrNoEndpoint) true.
func (e *NoEndpointError) Is(target error) bool { return target == ErrNoEndpoint }

// Policy names.
const (
	PolicyAI             = "ai" // the default
	PolicyRoundRobin     = "round-robin"
	PolicyWeightedRandom = "weighted-random"
	PolicyLeastRequest   = "least-request"
	PolicyWLC            = "wlc"
	PolicyGPUScore       = "gpu-score"
)

// Options configure a Balancer. The zero value is usable.
type Options struct {
	// Service names the balanced service in errors and logs.
	Service string
	// Policy is one of the Policy* names (default "ai").
	Policy string
	// StaleAfter is the age of updated.at after which published signals are
	// neutral (default 90 s: three 30 s heartbeats).
	StaleAfter time.Duration
	// SlowStart is the window over which a newly ready instance's weight
	// ramps up (default 30 s; negative disables), from SlowStartMin
	// (default 0.1) to 1.
	SlowStart    time.Duration
	SlowStartMin float64
	// FailOpen, when nothing passes the filters, relaxes inference health
	// and staleness constraints (never DRAINING, STOPPED, or not warm).
	FailOpen bool
	// Breaker tunes the per-endpoint circuit breakers.
	Breaker BreakerConfig
	// DefaultTimeout is the floor of Endpoint.Timeout (default 30 s).
	DefaultTimeout time.Duration
	// Now and Rand are the clock and randomness (defaults time.Now and
	// math/rand/v2); injected by tests and the simulation.
	Now  func() time.Time
	Rand func(n int) int
	// Logger receives snapshot rebuild lines and peers' garbage metadata.
	Logger zerolog.Logger
}

func (o Options) withDefaults() Options {
	if o.Policy == "" {
		o.Policy = PolicyAI
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = 90 * time.Second
	}
	if o.SlowStart == 0 {
		o.SlowStart = 30 * time.Second
	}
	if o.SlowStartMin <= 0 || o.SlowStartMin > 1 {
		o.SlowStartMin = 0.1
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.IntN
	}
	o.Breaker = o.Breaker.withDefaults()
	return o
}

// Endpoint is one instance as of a snapshot. It is immutable except for its
// statistics, which are shared with later snapshots of the same address.
type Endpoint struct {
	ID      string
	IP      string
	Port    int
	Addr    string // host:port
	Weight  float64
	Enabled bool
	Healthy bool
	Meta    metadata.Instance
	// MetaErrors counts metadata values that could not be decoded.
	MetaErrors int

	st  *stats
	raw map[string]string // the metadata as delivered, to spot unchanged instances
	// Derived at rebuild so Pick does no parsing or time arithmetic.
	freshUntil   int64 // unix ns after which published signals are stale; 0: never fresh
	pubLoad      float64
	pubPressure  float64
	pubOK        bool
	weightStatic float64 // Nacos weight x instance.weight/100
}

// InFlight returns this client's requests in flight to the endpoint.
func (e *Endpoint) InFlight() int { return int(e.st.inflight.Load()) }

// stale reports whether the published signals are too old to trust.
func (e *Endpoint) stale(now int64) bool { return now > e.freshUntil }

// Timeout is the adaptive request timeout for this endpoint:
// max(def, 1.5 x p99 of this client's recent successful requests).
func (e *Endpoint) Timeout(now time.Time, def time.Duration) time.Duration {
	p99, ok := e.st.win.quantile(now, 0.99)
	if !ok {
		return def
	}
	t := time.Duration(1.5 * p99 * float64(time.Millisecond))
	return max(t, def)
}

// snapshot is immutable after build.
type snapshot struct {
	all      []*Endpoint
	routable []*Endpoint // passing the static filters
	relaxed  []*Endpoint // FailOpen set: up, active, warm
	byModel  map[string][]*Endpoint
	wild     []*Endpoint // routable with no or a truncated model list
	byLocale map[string][]*Endpoint
	reason   string  // why routable is empty
	medianMS float64 // fleet median latency, for normalisation
	// neutralLoad and neutralPressure are the fleet means of the fresh
	// instances' published load and pressure: what a stale instance is
	// assumed to have (neutral, neither idle nor saturated).
	neutralLoad, neutralPressure float64
}

// Balancer picks endpoints of one service.
type Balancer struct {
	// immutable after New
	opts Options
	log  zerolog.Logger

	snap atomic.Pointer[snapshot]
	rr   atomic.Uint64 // round-robin cursor

	mu    sync.Mutex // guards the fields below; held only by Update
	prev  map[hostPort]*Endpoint
	first bool
}

type hostPort struct {
	ip   string
	port int
}

// New returns a Balancer with no endpoints; feed it with Update (or use
// FromNacos).
func New(opts Options) *Balancer {
	o := opts.withDefaults()
	b := &Balancer{opts: o, log: o.Logger.With().Str("component", "balancer").Str("service", o.Service).Logger(),
		prev: map[hostPort]*Endpoint{}, first: true}
	b.snap.Store(&snapshot{reason: ReasonNoInstance})
	return b
}

// Update replaces the endpoint set with list, the complete instance list of
// the service (as a Nacos subscription delivers it), and publishes a new
// snapshot. It must not be called concurrently with itself. list is not
// modified; its metadata maps may be retained and must not be modified later
// (nacosreg delivers fresh maps each time).
func (b *Balancer) Update(list []nacosreg.Instance) {
	now := b.opts.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &snapshot{byModel: map[string][]*Endpoint{}, byLocale: map[string][]*Endpoint{}}
	next := make(map[hostPort]*Endpoint, len(list))
	var lat []float64
	bad := 0
	for i := range list {
		in := &list[i]
		k := hostPort{in.IP, in.Port}
		if next[k] != nil {
			continue // one endpoint per address
		}
		// A push carries the whole list though usually one instance changed:
		// an unchanged instance keeps its decoded Endpoint.
		e := b.prev[k]
		if e == nil || e.Enabled != in.Enabled || e.Healthy != in.Healthy || e.Weight != in.Weight || !maps.Equal(e.raw, in.Metadata) {
			md, rep := metadata.Decode(in.Metadata)
			if !rep.OK() {
				bad++
				b.log.Debug().Str("ip", in.IP).Int("port", in.Port).Str("problem", rep.Errors[0].Error()).Int("problems", len(rep.Errors)).Msg("garbage metadata; the bad fields are ignored")
			}
			var st *stats
			addr := ""
			if e != nil {
				st, addr = e.st, e.Addr
			} else {
				st, addr = newStats(b.opts.Breaker), net.JoinHostPort(in.IP, strconv.Itoa(in.Port))
			}
			e = &Endpoint{ID: in.ID, IP: in.IP, Port: in.Port, Addr: addr, Weight: in.Weight, Enabled: in.Enabled,
				Healthy: in.Healthy, Meta: md, MetaErrors: len(rep.Errors), st: st, raw: in.Metadata}
			e.derive(b.opts.StaleAfter)
		}
		next[k] = e
		st := e.st
		s.all = append(s.all, e)
		up := nacosUp(e) && active(e) && warm(e)
		if up {
			s.relaxed = append(s.relaxed, e)
		}
		if up && healthy(e) {
			s.routable = append(s.routable, e)
			if st.readySince.Load() == 0 {
				since := now.UnixNano()
				if b.first {
					since = 1 // present at start: no slow start
				}
				st.readySince.Store(since)
			}
			if e.Meta.LatencyP95.Set && !e.stale(now.UnixNano()) {
				lat = append(lat, float64(e.Meta.LatencyP95.V))
			}
		} else {
			st.readySince.Store(0) // slow start again when it comes back
		}
	}
	b.prev = next // endpoints gone from the list drop their stats with them
	for _, e := range s.routable {
		if len(e.Meta.LoadedModels) == 0 || e.Meta.LoadedModelsMore > 0 {
			s.wild = append(s.wild, e)
		}
		for _, m := range e.Meta.LoadedModels {
			s.byModel[m] = append(s.byModel[m], e)
		}
		for _, l := range e.Meta.Locales {
			s.byLocale[l] = append(s.byLocale[l], e)
		}
	}
	for m, es := range s.byModel {
		s.byModel[m] = append(es, s.wild...)
	}
	if len(lat) > 0 {
		sort.Float64s(lat)
		s.medianMS = lat[len(lat)/2]
	}
	s.neutralLoad, s.neutralPressure = 0.5, 0.5
	var nl, np float64
	nf := 0
	for _, e := range s.routable {
		if e.pubOK && !e.stale(now.UnixNano()) {
			nl, np, nf = nl+e.pubLoad, np+e.pubPressure, nf+1
		}
	}
	if nf > 0 {
		s.neutralLoad, s.neutralPressure = nl/float64(nf), np/float64(nf)
	}
	s.reason = emptyReason(s.all)
	b.first = false
	b.snap.Store(s)
	b.log.Debug().Int("instances", len(s.all)).Int("routable", len(s.routable)).Int("garbage", bad).Msg("snapshot rebuilt")
}

// emptyReason names the first filter that removed everything.
func emptyReason(all []*Endpoint) string {
	steps := []struct {
		pass   func(*Endpoint) bool
		reason string
	}{{nacosUp, ReasonNotEnabled}, {active, ReasonNotActive}, {warm, ReasonNotWarm}, {healthy, ReasonUnhealthy}}
	if len(all) == 0 {
		return ReasonNoInstance
	}
	left := all
	for _, st := range steps {
		var next []*Endpoint
		for _, e := range left {
			if st.pass(e) {
				next = append(next, e)
			}
		}
		if len(next) == 0 {
			return st.reason
		}
		left = next
	}
	return ""
}

// Cost returns the policy's cost for e now (lower is picked first) and
// whether e passes the static filters, for operators' views.
func (b *Balancer) Cost(e *Endpoint, now time.Time) (float64, bool) {
	s := b.snap.Load()
	for _, r := range s.routable {
		if r == e {
			return b.cost(s, e, now.UnixNano()), true
		}
	}
	return 0, false
}

// Endpoints returns the endpoints of the current snapshot (for operators'
// views). The slice must not be modified.
func (b *Balancer) Endpoints() []*Endpoint { return b.snap.Load().all }

// Result is the outcome of a request, reported through Done.
type Result struct {
	// Latency of the request; zero means "measure from Pick to Report".
	Latency time.Duration
	// Err is the request's failure, nil on success.
	Err error
	// Tokens and Bytes, if known (reserved for load estimates).
	Tokens int
	Bytes  int64
}

// Done reports the outcome of one picked request. It is a value (no
// allocation per pick); call Report exactly once.
type Done struct {
	b     *Balancer
	e     *Endpoint
	start int64
	probe bool
}

// Report records the outcome: in-flight count, latency estimates, breaker.
func (d Done) Report(r Result) {
	if d.e == nil {
		return
	}
	d.e.st.inflight.Add(-1)
	failed := r.Err != nil
	lat := r.Latency
	// The clock is read only when needed: the window slot of a successful
	// request with a known latency is its start's (slots are 10 s wide).
	now := time.Unix(0, d.start)
	if lat == 0 || failed || d.probe {
		now = d.b.opts.Now()
		if lat == 0 {
			lat = time.Duration(now.UnixNano() - d.start)
		}
	}
	d.e.st.win.record(now, lat, failed)
	if !failed {
		d.e.st.lat.add(float64(lat)/float64(time.Millisecond), 0.2)
	}
	d.e.st.br.record(now, d.e.st.win, failed, d.probe)
}

// Pick chooses an endpoint for req. It never blocks and does no I/O.
func (b *Balancer) Pick(_ context.Context, req Request) (*Endpoint, Done, error) {
	s := b.snap.Load()
	now := b.opts.Now().UnixNano()
	base := s.routable
	if len(base) == 0 && b.opts.FailOpen {
		base = s.relaxed
	}
	if len(base) == 0 {
		return nil, Done{}, &NoEndpointError{Service: b.opts.Service, Reason: s.reason}
	}
	cands := base
	filt := req // what each candidate is still checked against
	if req.Model != "" && len(s.routable) > 0 {
		if ms, ok := s.byModel[req.Model]; ok {
			cands = ms
		} else {
			cands = s.wild
		}
		filt.Model = "" // the index already matched it
	}
	var e *Endpoint
	if req.Locale != "" {
		if pref := s.byLocale[req.Locale]; len(pref) > 0 {
			e = b.choose(s, pref, &req, now)
		}
	}
	if e == nil {
		e = b.choose(s, cands, &filt, now)
	}
	if e == nil {
		return nil, Done{}, &NoEndpointError{Service: b.opts.Service, Reason: b.why(base, &req, now)}
	}
	ok, probe := e.st.br.allow(now)
	if !ok { // lost a race for the last half-open probe slot
		return nil, Done{}, &NoEndpointError{Service: b.opts.Service, Reason: ReasonBreakerOpen}
	}
	e.st.inflight.Add(1)
	return e, Done{b: b, e: e, start: now, probe: probe}, nil
}

// eligible applies the request filters to one candidate.
func (b *Balancer) eligible(e *Endpoint, req *Request, now int64) bool {
	return servesTask(e, req.Task) && servesModel(e, req.Model) &&
		meets(e, req, now) && !e.st.br.isOpen(now) && !excluded(e, req)
}

// why explains an empty choice by the first request filter that failed.
func (b *Balancer) why(cands []*Endpoint, req *Request, now int64) string {
	task, model, cons := false, false, false
	for _, e := range cands {
		if !servesTask(e, req.Task) {
			continue
		}
		task = true
		if !servesModel(e, req.Model) {
			continue
		}
		model = true
		if meets(e, req, now) {
			cons = true
		}
	}
	switch {
	case !task:
		return ReasonNoTask + " " + req.Task
	case !model:
		return ReasonNoModel + " " + req.Model
	case !cons:
		return ReasonConstraints
	}
	return ReasonBreakerOpen
}

// choose applies the policy to cands.
func (b *Balancer) choose(s *snapshot, cands []*Endpoint, req *Request, now int64) *Endpoint {
	if len(cands) == 0 {
		return nil
	}
	switch b.opts.Policy {
	case PolicyRoundRobin:
		n := len(cands)
		start := int(b.rr.Add(1) % uint64(n))
		for i := 0; i < n; i++ {
			if e := cands[(start+i)%n]; b.eligible(e, req, now) {
				return e
			}
		}
		return nil
	case PolicyWeightedRandom:
		return b.weightedRandom(cands, req, now)
	case PolicyWLC, PolicyGPUScore:
		return b.scan(s, cands, req, now)
	case PolicyAI:
		// With few candidates, two random draws too often hold only slow
		// instances (12 instances of three speeds: ~9% of picks); scanning
		// them all costs little, and the client's own in-flight count in the
		// cost keeps successive picks from herding.
		if len(cands) <= scanBelow {
			return b.scan(s, cands, req, now)
		}
	}
	return b.p2c(s, cands, req, now)
}

// scanBelow is the candidate count under which the ai policy compares every
// candidate instead of two random ones.
const scanBelow = 16

// p2c is power of two choices: two random eligible candidates, the cheaper
// wins. A few redraws find eligible ones; a scan is the fallback.
func (b *Balancer) p2c(s *snapshot, cands []*Endpoint, req *Request, now int64) *Endpoint {
	n := len(cands)
	var x, y *Endpoint
	for tries := 0; tries < 8 && y == nil; tries++ {
		e := cands[b.opts.Rand(n)]
		if e == x || !b.eligible(e, req, now) {
			continue
		}
		if x == nil {
			x = e
		} else {
			y = e
		}
		if n == 1 {
			break
		}
	}
	if x == nil {
		for _, e := range cands {
			if b.eligible(e, req, now) {
				x = e
				break
			}
		}
		if x == nil {
			return nil
		}
	}
	if y == nil {
		return x
	}
	if b.cost(s, y, now) < b.cost(s, x, now) {
		return y
	}
	return x
}

func (b *Balancer) weightedRandom(cands []*Endpoint, req *Request, now int64) *Endpoint {
	total := 0.0
	for _, e := range cands {
		if b.eligible(e, req, now) {
			total += b.weight(e, now)
		}
	}
	if total <= 0 {
		return nil
	}
	r := float64(b.opts.Rand(1<<30)) / float64(1<<30) * total
	var last *Endpoint
	for _, e := range cands {
		if !b.eligible(e, req, now) {
			continue
		}
		last = e
		if r -= b.weight(e, now); r < 0 {
			return e
		}
	}
	return last
}

// scan picks the minimum cost over every candidate (wlc, gpu-score).
func (b *Balancer) scan(s *snapshot, cands []*Endpoint, req *Request, now int64) *Endpoint {
	var best *Endpoint
	bestC := math.Inf(1)
	start := b.opts.Rand(len(cands)) // ties go to a random one
	for i := range cands {
		e := cands[(start+i)%len(cands)]
		if !b.eligible(e, req, now) {
			continue
		}
		if c := b.cost(s, e, now); c < bestC {
			best, bestC = e, c
		}
	}
	return best
}

// weight is the effective weight: Nacos weight x instance.weight/100 x the
// slow-start ramp.
func (b *Balancer) weight(e *Endpoint, now int64) float64 {
	w := e.weightStatic
	if b.opts.SlowStart > 0 {
		if since := e.st.readySince.Load(); since > 1 {
			if age := time.Duration(now - since); age < b.opts.SlowStart {
				w *= max(b.opts.SlowStartMin, float64(age)/float64(b.opts.SlowStart))
			}
		}
	}
	return max(w, 1e-6)
}

// latencyMS is the endpoint's expected latency: this client's EWMA once it
// has a few samples, else the published p95 while fresh, else the fleet
// median (neutral).
func (b *Balancer) latencyMS(s *snapshot, e *Endpoint, now int64) float64 {
	if v, n := e.st.lat.value(); n >= 5 {
		return v
	}
	if e.Meta.LatencyP95.Set && !e.stale(now) && e.Meta.LatencyP95.V > 0 {
		return float64(e.Meta.LatencyP95.V)
	}
	if s.medianMS > 0 {
		return s.medianMS
	}
	return 100
}

// cost is the policy's score; lower is better.
func (b *Balancer) cost(s *snapshot, e *Endpoint, now int64) float64 {
	inflight := float64(e.st.inflight.Load())
	w := b.weight(e, now)
	switch b.opts.Policy {
	case PolicyLeastRequest:
		return inflight / w
	case PolicyWLC: // the design background's in-flight x p95 / weight (60 s window)
		p95, ok := e.st.p95(now)
		if !ok {
			p95 = b.latencyMS(s, e, now)
		}
		return (inflight + 1) * p95 / w
	case PolicyGPUScore: // 0.3 util, 0.3 VRAM used, 0.2 queue, 0.2 latency
		util, vram, queue := 0.5, 0.5, 0.5
		if !e.stale(now) {
			if e.Meta.GPUUtil.Set {
				util = float64(e.Meta.GPUUtil.V) / 100
			}
			if e.Meta.GPUMemAvailable.Set && e.Meta.GPUMemTotal.Set && e.Meta.GPUMemTotal.V > 0 {
				vram = 1 - float64(e.Meta.GPUMemAvailable.V)/float64(e.Meta.GPUMemTotal.V)
			}
			if e.Meta.QueueDepth.Set {
				queue = min(float64(e.Meta.QueueDepth.V)/10, 1)
			}
		}
		lat := min(b.latencyMS(s, e, now)/max(s.medianMS, 1)/4, 1)
		return (0.3*util + 0.3*vram + 0.2*queue + 0.2*lat) / w
	}
	// PolicyAI: expected wait ~ (1 + in flight) x latency, scaled by the
	// load the instance itself published (all clients' requests, which this
	// client cannot see); the fleet's mean when stale. The published terms
	// are weighted lightly because they lag by a cycle plus a push: in the
	// fleet simulation (make sim, seeds 1-4) weights 1/0.5 gave p99 1-3%
	// behind wlc, 0.25/0.1 3-6% ahead of it, 0.1/0.05 about the same.
	load, pressure := e.pubLoad, e.pubPressure
	if !e.pubOK || e.stale(now) {
		load, pressure = s.neutralLoad, s.neutralPressure
	}
	return (1 + inflight) * b.latencyMS(s, e, now) * (1 + 0.25*load + 0.1*pressure) / w
}

// derive computes what Pick needs from the metadata: the weight, the
// freshness deadline, and the published load (queue + in flight over
// max.concurrent) and pressure (KV cache, GPU utilisation, VRAM used).
func (e *Endpoint) derive(staleAfter time.Duration) {
	m := &e.Meta
	e.weightStatic = e.Weight
	if e.weightStatic <= 0 {
		e.weightStatic = 1
	}
	if m.Weight.Set {
		e.weightStatic *= float64(m.Weight.V) / 100
	}
	if m.UpdatedAt.Set {
		e.freshUntil = time.Unix(m.UpdatedAt.V, 0).Add(staleAfter).UnixNano()
	}
	if m.MaxConcurrent.Set && m.MaxConcurrent.V > 0 && (m.QueueDepth.Set || m.Inflight.Set) {
		e.pubLoad = min(float64(m.QueueDepth.V+m.Inflight.V)/float64(m.MaxConcurrent.V), 4)
		e.pubOK = true
	}
	if m.KVCacheUsage.Set {
		e.pubPressure += 0.5 * float64(m.KVCacheUsage.V) / 100
		e.pubOK = true
	}
	if m.GPUUtil.Set {
		e.pubPressure += 0.2 * float64(m.GPUUtil.V) / 100
		e.pubOK = true
	}
	if m.GPUMemAvailable.Set && m.GPUMemTotal.Set && m.GPUMemTotal.V > 0 {
		e.pubPressure += 0.3 * (1 - float64(m.GPUMemAvailable.V)/float64(m.GPUMemTotal.V))
		e.pubOK = true
	}
}
