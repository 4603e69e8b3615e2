package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/gpu"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/metrics"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/publish"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/shutdown"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/warmup"
)

// Registry is what a Bridge needs of Nacos (nacosreg.Client satisfies it).
type Registry interface {
	Register(nacosreg.Registration) error
	Update(nacosreg.Registration) error
	Deregister(nacosreg.Registration) error
}

// Config describes the instance and tunes its cycles. Zero durations take
// the defaults.
type Config struct {
	Service string
	Group   string
	Cluster string
	IP      string
	Port    int
	// Static facts published as metadata.
	Static Static
	// Cycle is the health cycle (default 5 s).
	Cycle time.Duration
	// InferenceEvery runs the inference probe every N cycles (default 6:
	// 30 s at the default cycle).
	InferenceEvery int
	// LivenessFailures is how many failed liveness cycles in a row take the
	// instance cold (default 3).
	LivenessFailures int
	// ProbeTimeout bounds each probe (default 5 s).
	ProbeTimeout time.Duration
	// Warmup tunes the warm-up (see package warmup).
	Warmup warmup.Config
	// PropagationDelay and DrainTimeout tune the drain (see package
	// shutdown; defaults 3 s and 30 s).
	PropagationDelay time.Duration
	DrainTimeout     time.Duration
	// DisableEnabledFlag keeps Nacos's enabled flag true whatever the
	// state. Java and Go Nacos clients skip disabled instances, so by
	// default the bridge disables an instance that is not routable; r-nacos
	// cannot re-enable an instance over gRPC, so set this for r-nacos.
	DisableEnabledFlag bool
	// Publish and Budget tune metadata writes (see package publish).
	Publish publish.Policy
	Budget  int
	// ConfigSource is where the inference config lives; nil Listener in
	// the options disables it.
	ConfigSource inferencecfg.Source
}

func (c Config) withDefaults() Config {
	if c.Group == "" {
		c.Group = inferencecfg.DefaultGroup
	}
	if c.Cycle <= 0 {
		c.Cycle = 5 * time.Second
	}
	if c.InferenceEvery <= 0 {
		c.InferenceEvery = 6
	}
	if c.LivenessFailures <= 0 {
		c.LivenessFailures = 3
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = 5 * time.Second
	}
	if c.PropagationDelay <= 0 {
		c.PropagationDelay = 3 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.ConfigSource.Service == "" {
		c.ConfigSource.Service = c.Service
	}
	return c
}

// Load is the backend's load as the bridge publishes it; negative = unknown.
type Load struct {
	QueueDepth   int64
	Inflight     int64
	KVCacheUsage int64
}

// Option customises a Bridge.
type Option func(*Bridge)

// WithLiveness sets the liveness layer (default: always live).
func WithLiveness(c Checker) Option { return func(b *Bridge) { b.liveness = c } }

// WithReadiness sets the readiness layer (default: ready when live).
func WithReadiness(c Checker) Option { return func(b *Bridge) { b.readiness = c } }

// WithInferenceProbe sets the inference probe: one fixed inference, its
// latency, and nil when the answer was right (default: none; inference
// health then follows readiness).
func WithInferenceProbe(p func(ctx context.Context) (time.Duration, error)) Option {
	return func(b *Bridge) { b.inference = p }
}

// WithWarmup sets the warm-up inference (default: none; ready at once).
func WithWarmup(f warmup.Func) Option { return func(b *Bridge) { b.warm = f } }

// WithGPU sets the GPU sampler (default: gpu.None).
func WithGPU(s gpu.Sampler) Option { return func(b *Bridge) { b.gpu = s } }

// WithLoad sets the backend load source (default: in-flight requests seen
// by Middleware / Begin).
func WithLoad(f func() Load) Option { return func(b *Bridge) { b.load = f } }

// WithModels sets a source of the loaded models (a backend adapter's model
// list), published instead of Static.Models whenever it returns any.
func WithModels(f func() []string) Option { return func(b *Bridge) { b.models = f } }

// WithConfig makes the bridge watch and hot-apply the inference config.
func WithConfig(l inferencecfg.Listener) Option { return func(b *Bridge) { b.cfgListener = l } }

// WithLogger sets the logger (default: quiet).
func WithLogger(l zerolog.Logger) Option { return func(b *Bridge) { b.log = l } }

// WithClock sets the clock for warm-up and drain waits (tests).
func WithClock(c shutdown.Clock) Option { return func(b *Bridge) { b.clock = c } }

// State is a snapshot of the bridge for State() and the admin endpoint.
type State struct {
	Lifecycle        metadata.Lifecycle  `json:"lifecycle"`
	Warm             metadata.WarmStatus `json:"warm"`
	WarmReason       string              `json:"warm_reason,omitempty"`
	InferenceHealthy bool                `json:"inference_healthy"`
	InFlight         int64               `json:"in_flight"`
	Metadata         map[string]string   `json:"metadata"`
	ConfigRev        string              `json:"config_rev"`
	Config           inferencecfg.Status `json:"config"`
	Writes           publish.Counters    `json:"writes"`
}

// Bridge registers one instance in Nacos and keeps its metadata true to the
// backend: health layers, warm-up, config, drain.
type Bridge struct {
	// immutable after New
	cfg         Config
	reg         Registry
	ident       nacosreg.Registration
	liveness    Checker
	readiness   Checker
	inference   func(ctx context.Context) (time.Duration, error)
	warm        warmup.Func
	gpu         gpu.Sampler
	load        func() Load
	models      func() []string
	cfgListener inferencecfg.Listener
	log         zerolog.Logger // component=bridge
	base        zerolog.Logger // service and instance only, for sub-components
	clock       shutdown.Clock
	store       *inferencecfg.Store
	tracker     *shutdown.Tracker
	probes      [numProbes]probeStats // indexed by probeLiveness...; atomic

	mu        sync.Mutex // guards the state below; held across a publish
	m         *Machine
	pub       *publish.Publisher
	desired   Desired
	infOK     metadata.Tri
	warmWhy   string
	lat       *latencies
	liveFails int
	cycle     int
	warming   context.CancelFunc // cancels a running warm-up

	// startup timing, for the "time to ACTIVE" line; guarded by mu
	tStart, tRegistered, tWarmStart time.Time

	wg       sync.WaitGroup // warm-up goroutines
	stopOnce sync.Once
	stop     chan struct{} // closed by Shutdown
	done     chan struct{} // closed when Run returns
}

// New returns a Bridge for the instance cfg describes. Nothing happens until
// Run.
func New(cfg Config, reg Registry, opts ...Option) (*Bridge, error) {
	cfg = cfg.withDefaults()
	if cfg.Service == "" || cfg.IP == "" || cfg.Port <= 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("bridge: service, ip and port are required (got %q %q %d)", cfg.Service, cfg.IP, cfg.Port)
	}
	if err := cfg.Warmup.Validate(); err != nil {
		return nil, err
	}
	b := &Bridge{cfg: cfg, reg: reg, gpu: gpu.None{}, log: zerolog.Nop(), clock: shutdown.SystemClock{},
		tracker: shutdown.NewTracker(), lat: newLatencies(32), stop: make(chan struct{}), done: make(chan struct{})}
	for i := range b.probes {
		b.probes[i].hist = metrics.NewHistogram(nil)
	}
	for _, o := range opts {
		o(b)
	}
	base := b.log.With().Str("service", cfg.Service).Str("instance", cfg.IP+":"+strconv.Itoa(cfg.Port)).Logger()
	b.log = base.With().Str("component", "bridge").Logger()
	b.store = inferencecfg.NewStore(base, nil)
	b.ident = nacosreg.Registration{Service: cfg.Service, Group: cfg.Group, Cluster: cfg.Cluster, IP: cfg.IP, Port: cfg.Port}
	b.m = NewMachine(cfg.IP+":"+strconv.Itoa(cfg.Port), cfg.Service, 0)
	b.pub = publish.New(reg, b.ident, publish.Options{Policy: cfg.Publish, Budget: cfg.Budget, Logger: base})
	b.base = base
	return b, nil
}

// Config returns the inference parameters in force (lock-free).
func (b *Bridge) Config() *inferencecfg.Config { return b.store.Current() }

// SubscribeConfig calls fn after each applied inference config change (for
// handing the parameters to a backend); the returned func unsubscribes.
func (b *Bridge) SubscribeConfig(fn func(old, new *inferencecfg.Config)) (cancel func()) {
	return b.store.Subscribe(fn)
}

// ConfigStatus returns the inference config's status (revision, last
// rejection).
func (b *Bridge) ConfigStatus() inferencecfg.Status { return b.store.Status() }

// Middleware counts in-flight requests for the metadata and the drain, and
// answers 503 with Retry-After once the drain refuses new work.
func (b *Bridge) Middleware(h http.Handler) http.Handler { return b.tracker.Middleware(h) }

// Tracker returns the in-flight tracker behind Middleware, Begin and End,
// for a handler that takes one itself (the sidecar's proxy, which then also
// counts what the drain refused).
func (b *Bridge) Tracker() *shutdown.Tracker { return b.tracker }

// Begin and End track one unit of non-HTTP work; Begin returns false while
// draining refuses new work.
func (b *Bridge) Begin() bool { return b.tracker.Begin() }

// End finishes what Begin started.
func (b *Bridge) End() { b.tracker.End() }

// State returns a snapshot of the bridge.
func (b *Bridge) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return State{Lifecycle: b.m.Lifecycle(), Warm: b.m.Warm(), WarmReason: b.warmWhy, InferenceHealthy: b.infOK != metadata.False,
		InFlight: b.tracker.InFlight(), Metadata: b.pub.LastWritten(), ConfigRev: b.store.Current().Rev,
		Config: b.store.Status(), Writes: b.pub.Counters()}
}

// Probes returns the results and latencies of the probes configured
// (liveness, readiness, inference), in that order. Lock-free.
func (b *Bridge) Probes() []ProbeStats {
	configured := [numProbes]bool{b.liveness != nil, b.readiness != nil, b.inference != nil}
	var out []ProbeStats
	for i := range b.probes {
		if configured[i] {
			out = append(out, b.probes[i].snapshot(probeNames[i]))
		}
	}
	return out
}

// Events returns the recorded state transitions, oldest first.
func (b *Bridge) Events() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m.Events()
}

// Run registers the instance (REGISTERED, cold, disabled), applies the
// inference config, runs the health cycle (readiness -> warm-up -> ACTIVE,
// inference probe, liveness) until ctx is cancelled or Shutdown is called,
// then drains and deregisters. It returns once the instance is STOPPED.
func (b *Bridge) Run(ctx context.Context) error {
	defer close(b.done)
	b.mu.Lock()
	b.tStart = time.Now()
	err := b.publishLocked()
	b.tRegistered = time.Now()
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("bridge: register: %w", err)
	}
	b.log.Info().Dur("took", b.tRegistered.Sub(b.tStart)).Msg("registered (REGISTERED, cold)")
	if b.cfgListener != nil {
		w, err := inferencecfg.Watch(b.cfgListener, b.cfg.ConfigSource, b.store, 5*time.Second)
		if err != nil {
			b.log.Warn().Err(err).Msg("inference config not watched; built-in defaults serve")
		} else {
			defer w.Stop()
			cancel := b.store.Subscribe(func(_, _ *inferencecfg.Config) { b.republish() })
			defer cancel()
		}
	}
	t := time.NewTicker(b.cfg.Cycle)
	defer t.Stop()
	loopCtx, cancelLoop := context.WithCancel(ctx)
	defer cancelLoop()
	b.tick(loopCtx)
	for {
		select {
		case <-ctx.Done():
		case <-b.stop:
		case <-t.C:
			b.tick(loopCtx)
			continue
		}
		break
	}
	cancelLoop()
	return b.drain()
}

// Shutdown starts the drain (if Run is running) and waits for Run to
// return, or for ctx: a cancelled ctx abandons the wait (the drain goes on
// under its own timeout).
func (b *Bridge) Shutdown(ctx context.Context) error {
	b.stopOnce.Do(func() { close(b.stop) })
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tick is one health cycle.
func (b *Bridge) tick(ctx context.Context) {
	live := b.check(ctx, probeLiveness, b.liveness)
	ready := live == nil && b.check(ctx, probeReadiness, b.readiness) == nil
	var infLat time.Duration
	var infErr error
	b.mu.Lock()
	b.cycle++
	runInference := b.inference != nil && b.m.Lifecycle() == metadata.Active && (b.cycle%b.cfg.InferenceEvery == 0 || b.infOK == metadata.Unknown || b.infOK == metadata.False)
	b.mu.Unlock()
	if runInference {
		pctx, cancel := context.WithTimeout(ctx, b.cfg.ProbeTimeout)
		started := time.Now()
		infLat, infErr = b.inference(pctx)
		b.probes[probeInference].record(time.Since(started), infErr)
		cancel()
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if live != nil {
		b.liveFails++
		if b.liveFails == b.cfg.LivenessFailures {
			b.log.Warn().Err(live).Int("cycles", b.liveFails).Msg("backend not live; going cold")
			b.goColdLocked("liveness failed "+strconv.Itoa(b.liveFails)+" cycles: "+live.Error(), now)
		}
	} else {
		b.liveFails = 0
	}
	if b.inference == nil {
		b.infOK = metadata.TriOf(ready)
	} else if runInference {
		if infErr == nil {
			b.lat.add(infLat)
		}
		if ok := metadata.TriOf(infErr == nil); ok != b.infOK {
			if infErr != nil {
				b.log.Warn().Err(infErr).Msg("inference probe failed; instance unroutable")
			} else {
				b.log.Info().Dur("latency", infLat).Msg("inference probe passes")
			}
			b.infOK = ok
		}
	}
	if ready && b.m.Warm() == metadata.Cold && b.warming == nil && b.m.Lifecycle() == metadata.Registered {
		b.startWarmupLocked(ctx, now)
	}
	if err := b.publishLocked(); err != nil {
		b.log.Debug().Err(err).Msg("metadata write failed; retrying next cycle")
	}
}

func (b *Bridge) check(ctx context.Context, probe int, c Checker) error {
	if c == nil {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, b.cfg.ProbeTimeout)
	defer cancel()
	started := time.Now()
	err := c.Check(pctx)
	b.probes[probe].record(time.Since(started), err)
	return err
}

// goColdLocked takes the instance out of rotation until warmed up again.
func (b *Bridge) goColdLocked(reason string, now time.Time) {
	if b.warming != nil {
		b.warming()
		b.warming = nil
	}
	b.transitionLocked(func() (Event, bool, error) { return b.m.SetWarm(metadata.Cold, reason, now) })
	if b.m.Lifecycle() == metadata.Active {
		b.transitionLocked(func() (Event, bool, error) { return b.m.SetLifecycle(metadata.Registered, reason, now) })
	}
	b.infOK = metadata.Unknown
}

func (b *Bridge) transitionLocked(f func() (Event, bool, error)) {
	e, changed, err := f()
	if err != nil {
		b.log.Error().Err(err).Msg("state transition refused")
		return
	}
	if changed {
		b.log.Info().Str("kind", e.Kind).Str("from", e.From).Str("to", e.To).Str("reason", e.Reason).Msg("transition")
		if err := b.publishLocked(); err != nil {
			b.log.Warn().Err(err).Msg("metadata write failed; retrying next cycle")
		}
	}
}

// startWarmupLocked runs warm-up on a goroutine owned by the bridge; it
// retries with back-off until it succeeds or the instance leaves.
func (b *Bridge) startWarmupLocked(ctx context.Context, now time.Time) {
	if b.tWarmStart.IsZero() {
		b.tWarmStart = now
	}
	b.transitionLocked(func() (Event, bool, error) { return b.m.SetWarm(metadata.Warming, "ready; warming up", now) })
	wctx, cancel := context.WithCancel(ctx)
	b.warming = cancel
	f := b.warm
	if f == nil {
		f = func(context.Context, int) error { return nil }
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		started := time.Now()
		res, err := warmup.Until(wctx, b.cfg.Warmup, f, b.clock, func(attempt int, r warmup.Result) {
			if !r.OK {
				b.mu.Lock()
				b.warmWhy = fmt.Sprintf("attempt %d: %s", attempt, r.Reason)
				_ = b.publishLocked()
				b.mu.Unlock()
				b.log.Warn().Int("attempt", attempt).Str("reason", r.Reason).Msg("warm-up failed; retrying with back-off")
			}
		})
		b.mu.Lock()
		defer b.mu.Unlock()
		if wctx.Err() != nil || err != nil || b.warming == nil {
			return // cancelled: gone cold or draining
		}
		cancel()
		b.warming = nil
		now := time.Now()
		b.warmWhy = ""
		if res.P50 > 0 {
			b.lat.add(res.P50)
			b.lat.add(res.P95)
		}
		b.log.Info().Dur("took", time.Since(started)).Dur("p50", res.P50).Dur("p95", res.P95).Int("rounds", res.Rounds).Msg("warm-up done")
		b.transitionLocked(func() (Event, bool, error) { return b.m.SetWarm(metadata.Ready, "warm-up passed", now) })
		b.infOK = metadata.Unknown // probe before trusting
		b.transitionLocked(func() (Event, bool, error) { return b.m.SetLifecycle(metadata.Active, "warm", now) })
		b.log.Info().Dur("start_to_active", now.Sub(b.tStart)).Dur("register", b.tRegistered.Sub(b.tStart)).
			Dur("readiness", b.tWarmStart.Sub(b.tRegistered)).Dur("warmup", now.Sub(b.tWarmStart)).Msg("ACTIVE")
	}()
}

// republish writes at once after a config change (config.rev is critical).
func (b *Bridge) republish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.publishLocked(); err != nil {
		b.log.Warn().Err(err).Msg("metadata write failed; retrying next cycle")
	}
}

// publishLocked offers the desired metadata to the publisher.
func (b *Bridge) publishLocked() error {
	if b.m.Lifecycle() == metadata.Stopped {
		return nil
	}
	ld := Load{QueueDepth: -1, Inflight: b.tracker.InFlight(), KVCacheUsage: -1}
	if b.load != nil {
		ld = b.load()
	}
	p50, p95 := b.lat.quantiles()
	live := Live{Lifecycle: b.m.Lifecycle(), Warm: b.m.Warm(), WarmReason: b.warmWhy, InferenceHealthy: b.infOK,
		LatencyP50MS: p50, LatencyP95MS: p95, QueueDepth: ld.QueueDepth, Inflight: ld.Inflight, KVCacheUsage: ld.KVCacheUsage,
		ConfigRev: b.store.Current().Rev}
	if b.infOK == metadata.Unknown && b.m.Lifecycle() != metadata.Active {
		live.InferenceHealthy = metadata.Unknown
	}
	enabled := b.m.Routable() && b.infOK != metadata.False
	if b.cfg.DisableEnabledFlag {
		enabled = true
	}
	st := b.cfg.Static
	if b.models != nil {
		if m := b.models(); len(m) > 0 {
			st.Models = m
		}
	}
	d := b.desired.Build(st, live, b.gpu.Sample())
	_, err := b.pub.Offer(d, enabled)
	return err
}

// drain runs the shutdown plan: DRAINING at once, serve during the
// propagation delay, refuse, wait for in-flight work, deregister.
func (b *Bridge) drain() error {
	b.mu.Lock()
	if b.warming != nil {
		b.warming()
		b.warming = nil
	}
	b.mu.Unlock()
	b.wg.Wait()
	plan := shutdown.Plan{
		PropagationDelay: b.cfg.PropagationDelay,
		DrainTimeout:     b.cfg.DrainTimeout,
		Tracker:          b.tracker,
		Clock:            b.clock,
		Logger:           b.base,
		MarkDraining: func(context.Context) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.transitionLocked(func() (Event, bool, error) { return b.m.SetLifecycle(metadata.Draining, "shutdown", time.Now()) })
			return b.publishLocked()
		},
		Deregister: func(context.Context) error {
			err := b.reg.Deregister(b.ident)
			b.mu.Lock()
			defer b.mu.Unlock()
			b.transitionLocked(func() (Event, bool, error) { return b.m.SetLifecycle(metadata.Stopped, "drained", time.Now()) })
			return err
		},
	}
	rep := plan.Run(context.Background())
	b.log.Info().Str("drain", rep.String()).Msg("stopped")
	if rep.Abandoned > 0 {
		return fmt.Errorf("bridge: drain timed out with %d requests in flight", rep.Abandoned)
	}
	var errs []error
	for _, s := range rep.Steps {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, s.Err))
		}
	}
	return errors.Join(errs...)
}
