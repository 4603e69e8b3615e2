package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/balancer"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

// epoch is the simulated wall clock at time zero; any fixed instant works,
// it only has to be the same in every run.
var epoch = time.Unix(1_700_000_000, 0).UTC()

// errRefused is the outcome of a request that reached an instance that was
// gone, or was still queued there when its drain timed out.
var errRefused = errors.New("sim: connection refused")

// Random streams, one per purpose, so that a policy's choices never shift
// the workload another policy sees.
const (
	streamWorkload = 1000 // + client
	streamPush     = 2000 // + client
	streamBalancer = 3000 // + client
	streamPhase    = 4000
)

// maxDrain bounds how long after the arrivals stop a run may take to
// finish its backlog.
const maxDrain = 2 * time.Hour

// event is one scheduled action; seq orders events of the same instant by
// scheduling order, which keeps runs deterministic.
type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// request is one request from its arrival at a client to its response.
type request struct {
	client  *client
	arrive  time.Duration
	size    float64 // standard normal deviate of the lognormal service time
	srv     *server
	svc     time.Duration // fixed when service starts
	end     time.Duration // completion time once started
	done    balancer.Done
	picked  bool // done is from a balancer pick
	dead    bool // failed; a pending completion is ignored
	started bool
}

// view is what one client was last told about one instance.
type view struct {
	present bool
	life    metadata.Lifecycle
	warm    metadata.WarmStatus
}

func (v view) routable() bool {
	return v.present && v.life == metadata.Active && v.warm == metadata.Ready
}

type client struct {
	id      int
	b       *balancer.Balancer // nil for the oracle
	work    *rand.Rand         // interarrival times and request sizes
	push    *rand.Rand         // push delays
	rate    float64            // arrivals per second
	pending bool               // a push is scheduled
	views   []view             // per instance, as last pushed
}

// regEntry is one instance as the registry holds it.
type regEntry struct {
	present bool
	inst    nacosreg.Instance
	view    view
}

// engine runs one policy over the scenario.
type engine struct {
	cfg    Config
	policy string
	now    time.Duration
	seq    uint64
	events eventHeap

	mu      float64 // lognormal mu for MeanService
	servers []*server
	clients []*client
	byAddr  map[string]*server
	reg     []regEntry

	outstanding int
	res         Result
	lat         []float64 // ms, every completed request
}

// Run simulates cfg under one policy (a balancer policy name or Oracle).
func Run(cfg Config, policy string) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	e := newEngine(cfg, policy)
	e.run()
	return e.result(), nil
}

// Compare runs every policy on the same scenario and seed.
func Compare(cfg Config, policies []string) ([]Result, error) {
	out := make([]Result, 0, len(policies))
	for _, p := range policies {
		r, err := Run(cfg, p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (c Config) validate() error {
	switch {
	case c.Duration <= 0, c.Clients <= 0, len(c.Speeds) == 0, c.Slots <= 0, c.MeanService <= 0,
		c.Sigma < 0, c.Load <= 0, c.PublishEvery <= 0, c.PushDelayMax < c.PushDelayMin, c.LatencyWindow <= 0:
		return fmt.Errorf("sim: invalid config %+v", c)
	case c.Restart.On && (c.Restart.Instance < 0 || c.Restart.Instance >= len(c.Speeds)),
		c.Slowdown.On && (c.Slowdown.Instance < 0 || c.Slowdown.Instance >= len(c.Speeds)):
		return errors.New("sim: event instance out of range")
	}
	for _, s := range c.Speeds {
		if s <= 0 {
			return errors.New("sim: speeds must be positive")
		}
	}
	return nil
}

func newEngine(cfg Config, policy string) *engine {
	e := &engine{cfg: cfg, policy: policy, byAddr: map[string]*server{},
		mu: math.Log(cfg.MeanService.Seconds()) - cfg.Sigma*cfg.Sigma/2}
	e.res.Policy = policy
	now := func() time.Time { return epoch.Add(e.now) }
	for i, sp := range cfg.Speeds {
		s := &server{e: e, idx: i, ip: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), port: 8000, speed: sp, slow: 1}
		s.addr = net.JoinHostPort(s.ip, strconv.Itoa(s.port))
		e.servers = append(e.servers, s)
		e.byAddr[s.addr] = s
	}
	e.reg = make([]regEntry, len(e.servers))
	rate := cfg.Rate() / float64(cfg.Clients)
	for i := range cfg.Clients {
		c := &client{id: i, rate: rate, views: make([]view, len(e.servers)),
			work: rand.New(rand.NewPCG(cfg.Seed, streamWorkload+uint64(i))),
			push: rand.New(rand.NewPCG(cfg.Seed, streamPush+uint64(i)))}
		if policy != Oracle {
			r := rand.New(rand.NewPCG(cfg.Seed, streamBalancer+uint64(i)))
			c.b = balancer.New(balancer.Options{Service: "sim", Policy: policy, Now: now, Rand: r.IntN})
		}
		e.clients = append(e.clients, c)
	}
	return e
}

// at schedules fn at absolute simulated time t.
func (e *engine) at(t time.Duration, fn func()) {
	e.seq++
	heap.Push(&e.events, event{at: t, seq: e.seq, fn: fn})
}

func (e *engine) after(d time.Duration, fn func()) { e.at(e.now+d, fn) }

func (e *engine) run() {
	cfg := e.cfg
	// Time zero: every instance is up, ready and registered, and every
	// client has the list, as a subscription's initial query gives it.
	for _, s := range e.servers {
		s.boot(metadata.Active, metadata.Ready)
	}
	for _, c := range e.clients {
		e.deliver(c)
		c.pending = false
	}
	phase := rand.New(rand.NewPCG(cfg.Seed, streamPhase))
	for _, s := range e.servers {
		s.scheduleTick(time.Duration(phase.Int64N(int64(cfg.PublishEvery))))
	}
	for _, c := range e.clients {
		e.scheduleArrival(c)
	}
	if r := cfg.Restart; r.On {
		e.at(r.At, e.servers[r.Instance].drain)
	}
	if sd := cfg.Slowdown; sd.On {
		s := e.servers[sd.Instance]
		e.at(sd.At, func() { s.slow = sd.Factor })
		e.at(sd.At+sd.For, func() { s.slow = 1 })
	}
	for e.events.Len() > 0 {
		ev := heap.Pop(&e.events).(event)
		if ev.at >= cfg.Duration && e.outstanding == 0 || ev.at > cfg.Duration+maxDrain {
			break
		}
		e.now = ev.at
		ev.fn()
	}
	e.res.End = e.now
	// Whatever is left after maxDrain failed (only a policy that leaves a
	// backlog of hours gets here).
	for _, s := range e.servers {
		s.failAll()
	}
}

// scheduleArrival draws the client's next arrival and the request's size
// from the client's workload stream: one draw of each per request, whatever
// the policy, so every policy sees the same requests.
func (e *engine) scheduleArrival(c *client) {
	gap := time.Duration(c.work.ExpFloat64() / c.rate * float64(time.Second))
	size := c.work.NormFloat64()
	t := e.now + gap
	if t >= e.cfg.Duration {
		return
	}
	e.at(t, func() { e.arrive(c, size) })
}

func (e *engine) arrive(c *client, size float64) {
	e.scheduleArrival(c)
	r := &request{client: c, arrive: e.now, size: size}
	e.res.Sent++
	e.outstanding++
	var s *server
	if c.b == nil {
		s = e.oracle()
	} else {
		ep, done, err := c.b.Pick(context.Background(), balancer.Request{Task: "generation", Model: e.cfg.Model})
		if err == nil {
			s, r.done, r.picked = e.byAddr[ep.Addr], done, true
		}
	}
	if s == nil {
		e.res.Unroutable++
		e.fail(r)
		return
	}
	told := c.views[s.idx].routable()
	if !s.trulyRoutable() {
		e.res.ToNotReady++
		if !told {
			e.res.ToNotReadyPublished++
		}
	}
	if c.b != nil && !told {
		e.res.FilterViolations++
	}
	if s.slow > 1 {
		e.res.ToSlowed++
	}
	if sd := e.cfg.Slowdown; sd.On && e.now >= sd.At && e.now < sd.At+sd.For {
		e.res.SentDuringSlowdown++
	}
	s.accept(r)
}

// oracle picks the truly ready instance where the request would finish
// first in expectation; ties go to the lowest index.
func (e *engine) oracle() *server {
	var best *server
	bestT := time.Duration(math.MaxInt64)
	for _, s := range e.servers {
		if !s.trulyRoutable() {
			continue
		}
		if t := s.startDelay() + s.meanService(); t < bestT {
			best, bestT = s, t
		}
	}
	return best
}

// serviceTime is the service time of a request of the given size started
// now on s.
func (e *engine) serviceTime(s *server, size float64) time.Duration {
	sec := math.Exp(e.mu+e.cfg.Sigma*size) / s.factor()
	return time.Duration(sec * float64(time.Second))
}

func (e *engine) complete(r *request) {
	e.outstanding--
	lat := e.now - r.arrive
	if r.picked {
		r.done.Report(balancer.Result{Latency: lat})
	}
	e.res.Completed++
	if e.now <= e.cfg.Duration {
		e.res.CompletedInWindow++
	}
	e.lat = append(e.lat, float64(lat)/float64(time.Millisecond))
}

func (e *engine) fail(r *request) {
	r.dead = true
	e.outstanding--
	e.res.Failed++
	if r.picked {
		r.done.Report(balancer.Result{Latency: e.now - r.arrive, Err: errRefused})
	}
}

// write stores one instance's registration (the fake Nacos writer's work)
// and schedules the pushes.
func (e *engine) write(s *server, reg nacosreg.Registration) {
	md, _ := metadata.Decode(reg.Metadata)
	e.reg[s.idx] = regEntry{present: true,
		inst: nacosreg.Instance{ID: s.addr, Service: "sim", IP: s.ip, Port: s.port, Weight: 1,
			Enabled: true, Healthy: true, Ephemeral: true, Metadata: reg.Metadata},
		view: view{present: true, life: md.Lifecycle, warm: md.Warm}}
	e.res.Writes++
	e.changed()
}

// remove deregisters an instance.
func (e *engine) remove(s *server) {
	e.reg[s.idx] = regEntry{}
	e.changed()
}

// changed schedules a push to every client that has none pending; a
// pending one will carry this change too.
func (e *engine) changed() {
	for _, c := range e.clients {
		if c.pending {
			continue
		}
		c.pending = true
		span := int64(e.cfg.PushDelayMax - e.cfg.PushDelayMin)
		d := e.cfg.PushDelayMin
		if span > 0 {
			d += time.Duration(c.push.Int64N(span + 1))
		}
		e.after(d, func() { e.deliver(c) })
	}
}

// deliver pushes the registry's current list to one client.
func (e *engine) deliver(c *client) {
	c.pending = false
	list := make([]nacosreg.Instance, 0, len(e.reg))
	for i, en := range e.reg {
		c.views[i] = en.view
		if en.present {
			list = append(list, en.inst)
		}
	}
	if c.b != nil {
		c.b.Update(list)
	}
}

func (e *engine) result() Result {
	r := e.res
	if len(e.lat) > 0 {
		slices.Sort(e.lat)
		r.P50, r.P95, r.P99 = quantile(e.lat, 0.50), quantile(e.lat, 0.95), quantile(e.lat, 0.99)
		r.Max = ms(e.lat[len(e.lat)-1])
	}
	r.Throughput = float64(r.CompletedInWindow) / e.cfg.Duration.Seconds()
	return r
}

// quantile is the nearest-rank q-quantile of sorted ms values.
func quantile(sorted []float64, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return ms(sorted[max(i, 0)])
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
