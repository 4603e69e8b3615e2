package sim

import (
	"slices"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/publish"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

// Constant GPU facts of every instance. Free VRAM does not follow load:
// inference engines preallocate their KV cache (vLLM: 90% of VRAM).
const (
	gpuModel    = "NVIDIA H100 80GB HBM3"
	gpuMemTotal = 81559
	gpuMemFree  = 8156
	// utilAlpha is bridge.Desired's default EMA weight for utilisation.
	utilAlpha = 0.3
)

// sample is one completion, for the published latency quantiles.
type sample struct {
	at  time.Duration
	lat time.Duration // server side: queue wait + service
}

// server is one inference instance and its bridge.
type server struct {
	e     *engine
	idx   int
	ip    string
	port  int
	addr  string
	speed float64
	slow  float64 // service time multiplier of the slowdown event (1 = none)

	up   bool // process running and registered
	life metadata.Lifecycle
	warm metadata.WarmStatus

	running []*request
	queue   []*request // FIFO

	recent  []sample // completions within the latency window
	busy    time.Duration
	busyAt  time.Duration // start of the current busy stretch, if running
	tickAt  time.Duration // last health cycle
	util    float64
	hasUtil bool

	pub        *publish.Publisher
	drainStart time.Duration
}

// writer is the fake Nacos a server's publisher writes to.
type writer struct{ s *server }

func (w writer) Register(r nacosreg.Registration) error { w.s.e.write(w.s, r); return nil }
func (w writer) Update(r nacosreg.Registration) error   { w.s.e.write(w.s, r); return nil }

// boot starts the instance's process: fresh bridge and publisher, no
// latency history, and a first write (a registration).
func (s *server) boot(life metadata.Lifecycle, warm metadata.WarmStatus) {
	e := s.e
	s.up, s.life, s.warm = true, life, warm
	s.recent, s.hasUtil, s.busy, s.tickAt = nil, false, 0, e.now
	s.pub = publish.New(writer{s}, nacosreg.Registration{Service: "sim", IP: s.ip, Port: s.port, Weight: 1},
		publish.Options{Now: func() time.Time { return epoch.Add(e.now) }})
	s.offer()
}

// trulyRoutable is the instance's true state, whatever was published.
func (s *server) trulyRoutable() bool {
	return s.up && s.life == metadata.Active && s.warm == metadata.Ready
}

// factor is the speed of service started now: speed, slowdown, warm-up.
func (s *server) factor() float64 {
	f := s.speed / s.slow
	if s.warm != metadata.Ready {
		f /= s.e.cfg.Restart.WarmFactor
	}
	return f
}

func (s *server) meanService() time.Duration {
	return time.Duration(float64(s.e.cfg.MeanService) / s.factor())
}

// accept takes a request: into a free slot, else the queue; refused when
// the process is gone.
func (s *server) accept(r *request) {
	if !s.up {
		s.e.fail(r)
		return
	}
	r.srv = s
	if len(s.running) < s.e.cfg.Slots {
		s.start(r)
		return
	}
	s.queue = append(s.queue, r)
}

func (s *server) start(r *request) {
	e := s.e
	if len(s.running) == 0 {
		s.busyAt = e.now
	}
	r.started = true
	r.svc = e.serviceTime(s, r.size)
	r.end = e.now + r.svc
	s.running = append(s.running, r)
	e.at(r.end, func() { s.finish(r) })
}

func (s *server) finish(r *request) {
	if r.dead {
		return
	}
	e := s.e
	i := slices.Index(s.running, r)
	s.running = slices.Delete(s.running, i, i+1)
	if len(s.running) == 0 {
		s.busy += e.now - s.busyAt
	}
	s.recent = append(s.recent, sample{at: e.now, lat: e.now - r.arrive})
	e.complete(r)
	if len(s.queue) > 0 {
		next := s.queue[0]
		s.queue = s.queue[1:]
		s.start(next)
	}
	if s.life == metadata.Draining {
		s.tryStop()
	}
}

// startDelay is how long a request joining the queue now would wait for a
// slot, from the true remaining work: running requests' remaining service
// and queued requests' service (at today's factors), FIFO over the slots.
func (s *server) startDelay() time.Duration {
	slots := s.e.cfg.Slots
	if len(s.running)+len(s.queue) < slots {
		return 0
	}
	free := make([]time.Duration, 0, slots)
	for _, r := range s.running {
		free = append(free, r.end-s.e.now)
	}
	for len(free) < slots {
		free = append(free, 0)
	}
	for _, q := range s.queue {
		i := argmin(free)
		free[i] += s.e.serviceTime(s, q.size)
	}
	return free[argmin(free)]
}

func argmin(v []time.Duration) int {
	m := 0
	for i := range v {
		if v[i] < v[m] {
			m = i
		}
	}
	return m
}

// scheduleTick runs the health cycle every PublishEvery from first on.
func (s *server) scheduleTick(first time.Duration) {
	s.e.at(first, func() {
		s.tick()
		s.scheduleTick(s.e.now + s.e.cfg.PublishEvery)
	})
}

// tick is one health cycle: sample utilisation, offer the metadata.
func (s *server) tick() {
	if !s.up {
		return
	}
	e := s.e
	busy := s.busy
	if len(s.running) > 0 {
		busy += e.now - s.busyAt
		s.busyAt = e.now
	}
	if span := e.now - s.tickAt; span > 0 {
		u := 100 * float64(busy) / float64(span)
		if !s.hasUtil {
			s.util, s.hasUtil = u, true
		} else {
			s.util = utilAlpha*u + (1-utilAlpha)*s.util
		}
	}
	s.busy, s.tickAt = 0, e.now
	s.offer()
}

// offer builds the metadata the bridge would and lets the publisher decide
// whether to write it.
func (s *server) offer() {
	e := s.e
	slots := int64(e.cfg.Slots)
	in := metadata.Instance{
		Lifecycle: s.life, Warm: s.warm, InferenceHealthy: metadata.True, GPUHealthy: metadata.True,
		GPUModel: gpuModel, GPUCount: metadata.IntOf(1),
		GPUMemTotal: metadata.IntOf(gpuMemTotal), GPUMemAvailable: metadata.IntOf(gpuMemFree),
		LoadedModels: []string{e.cfg.Model}, SupportedTasks: []string{"generation"},
		MaxConcurrent: metadata.IntOf(slots),
		QueueDepth:    metadata.IntOf(int64(len(s.queue))), Inflight: metadata.IntOf(int64(len(s.running))),
		KVCacheUsage: metadata.IntOf(100 * int64(len(s.running)) / slots),
	}
	if s.hasUtil {
		in.GPUUtil = metadata.IntOf(int64(s.util + 0.5))
	}
	if p50, p95, ok := s.latency(); ok {
		in.LatencyP50, in.LatencyP95 = metadata.IntOf(p50), metadata.IntOf(p95)
	}
	_, _ = s.pub.Offer(in, true) // the fake writer never fails
}

// latency returns p50 and p95 (ms) of the completions in the window.
func (s *server) latency() (p50, p95 int64, ok bool) {
	cut := s.e.now - s.e.cfg.LatencyWindow
	i := 0
	for i < len(s.recent) && s.recent[i].at < cut {
		i++
	}
	s.recent = s.recent[i:]
	if len(s.recent) == 0 {
		return 0, 0, false
	}
	v := make([]float64, len(s.recent))
	for i, x := range s.recent {
		v[i] = float64(x.lat) / float64(time.Millisecond)
	}
	slices.Sort(v)
	return quantile(v, 0.5).Milliseconds(), quantile(v, 0.95).Milliseconds(), true
}

// drain starts the scripted restart: DRAINING is written at once.
func (s *server) drain() {
	e := s.e
	s.life, s.drainStart = metadata.Draining, e.now
	s.offer()
	rs := e.cfg.Restart
	e.after(rs.DrainGrace, s.tryStop)
	e.after(rs.DrainTimeout, func() {
		if s.up && s.life == metadata.Draining {
			s.stop()
		}
	})
}

// tryStop stops a draining instance once it is empty and the grace is over.
func (s *server) tryStop() {
	e := s.e
	if s.up && s.life == metadata.Draining && len(s.running)+len(s.queue) == 0 &&
		e.now-s.drainStart >= e.cfg.Restart.DrainGrace {
		s.stop()
	}
}

// stop deregisters the instance, fails what is left, and schedules its
// return.
func (s *server) stop() {
	e := s.e
	rs := e.cfg.Restart
	s.failAll()
	s.up, s.life, s.warm = false, "", ""
	e.remove(s)
	e.after(rs.Downtime, func() {
		s.boot(metadata.Registered, metadata.Cold)
		e.after(rs.ColdFor, func() { s.warm = metadata.Warming; s.offer() })
		e.after(rs.WarmUp, func() { s.life, s.warm = metadata.Active, metadata.Ready; s.offer() })
	})
}

// failAll fails every request running or queued on the instance.
func (s *server) failAll() {
	for _, r := range s.running {
		s.e.fail(r)
	}
	for _, r := range s.queue {
		s.e.fail(r)
	}
	if len(s.running) > 0 {
		s.busy += s.e.now - s.busyAt
	}
	s.running, s.queue = nil, nil
}
