package shutdown

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Defaults for the zero values of Plan's durations.
const (
	// DefaultPropagationDelay gives callers' caches time to see DRAINING:
	// Nacos pushes within a second, and polling clients refresh a little
	// later.
	DefaultPropagationDelay = 3 * time.Second
	// DefaultDrainTimeout bounds the wait for in-flight requests; long
	// generations may need more, configured per service.
	DefaultDrainTimeout = 30 * time.Second
	// DefaultCallTimeout bounds each of MarkDraining and Deregister, so a
	// registry that does not answer cannot hold the process forever.
	DefaultCallTimeout = 5 * time.Second
)

// Names of the steps of a Report, in the order Run takes them.
const (
	StepMarkDraining = "mark-draining" // Plan.MarkDraining
	StepPropagate    = "propagate"     // wait PropagationDelay, still serving
	StepDrain        = "drain"         // Tracker.Refuse, then wait for in-flight work
	StepDeregister   = "deregister"    // Plan.Deregister
)

// ErrDrainTimeout is wrapped by the drain step's error when DrainTimeout
// passed with work still in flight.
var ErrDrainTimeout = errors.New("shutdown: drain timeout")

// ErrCallTimeout is wrapped by the error of a MarkDraining or Deregister
// step whose func ran past CallTimeout.
var ErrCallTimeout = errors.New("shutdown: call timeout")

// Plan is one graceful-shutdown sequence. All fields are optional; for each
// duration, zero means its default and a negative value means no wait at all.
type Plan struct {
	// MarkDraining publishes DRAINING and enabled=false. It runs first, so
	// that the propagation delay counts from a published change. Its error
	// is recorded and the sequence goes on: draining without having told the
	// registry is still better than cutting requests off. Its ctx is bounded
	// by CallTimeout and cancelled when Run's ctx is.
	MarkDraining func(ctx context.Context) error

	// PropagationDelay is how long requests keep being admitted after
	// MarkDraining, while callers' caches catch up (default 3 s).
	PropagationDelay time.Duration

	// Tracker counts in-flight work; Run makes it Refuse after the
	// propagation delay and then waits for it. Nil means nothing to drain.
	Tracker *Tracker

	// DrainTimeout bounds the wait for in-flight work (default 30 s). Work
	// still running after it is counted in Report.Abandoned.
	DrainTimeout time.Duration

	// Deregister publishes STOPPED and removes the instance. It runs even
	// when Run's ctx is cancelled — an instance left registered keeps
	// receiving traffic until its heartbeat lapses — with a ctx of its own
	// bounded by CallTimeout.
	Deregister func(ctx context.Context) error

	// CallTimeout bounds each of MarkDraining and Deregister (default 5 s).
	// Both must honour their ctx; Run waits for them to return.
	CallTimeout time.Duration

	// Clock measures and waits (default SystemClock).
	Clock Clock

	// Logger gets one line per step; the zero value logs nothing.
	Logger zerolog.Logger
}

// Step is one step of a Report.
type Step struct {
	Name string        // one of the Step* constants
	Took time.Duration // by Plan.Clock
	Err  error         // nil when the step did all it set out to do
}

// Report says what Run did. Steps always holds the four steps in order; a
// wait skipped because Run's ctx was cancelled carries that ctx's error.
type Report struct {
	Steps []Step
	// Abandoned is how much work was still in flight when the drain stopped
	// waiting (timeout or force); 0 after a clean drain.
	Abandoned int64
	// Forced is true when Run's ctx was cancelled before the drain ended,
	// so waits were cut short.
	Forced bool
}

// Err returns the steps' errors joined, or nil when every step succeeded.
func (r Report) Err() error {
	var errs []error
	for _, s := range r.Steps {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, s.Err))
		}
	}
	return errors.Join(errs...)
}

// String renders the report on one line, for a log or an exit message, e.g.
// "mark-draining ok 2ms, propagate ok 3s, drain ok 1.2s, deregister ok 4ms".
func (r Report) String() string {
	var b strings.Builder
	for i, s := range r.Steps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.Name)
		if s.Err == nil {
			b.WriteString(" ok ")
		} else {
			b.WriteString(" failed ")
		}
		b.WriteString(s.Took.String())
		if s.Err != nil {
			fmt.Fprintf(&b, " (%v)", s.Err)
		}
	}
	if r.Abandoned > 0 {
		fmt.Fprintf(&b, "; %d abandoned", r.Abandoned)
	}
	if r.Forced {
		b.WriteString("; forced")
	}
	return b.String()
}

// withDefaults fills the zero values.
func (p Plan) withDefaults() Plan {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&p.PropagationDelay, DefaultPropagationDelay)
	def(&p.DrainTimeout, DefaultDrainTimeout)
	def(&p.CallTimeout, DefaultCallTimeout)
	if p.Clock == nil {
		p.Clock = SystemClock{}
	}
	return p
}

// Run executes the plan: MarkDraining, the propagation delay, Refuse and the
// bounded drain, Deregister. Cancelling ctx is the force path: the remaining
// waits are skipped, the Tracker still refuses, and Deregister still runs.
// Run returns when every step is done; errors are in the Report, never fatal.
func (p Plan) Run(ctx context.Context) Report {
	p = p.withDefaults()
	log := p.Logger.With().Str("component", "shutdown").Logger()
	r := Report{Steps: make([]Step, 0, 4)}
	step := func(name string, f func() error) {
		start := p.Clock.Now()
		err := f()
		s := Step{Name: name, Took: p.Clock.Now().Sub(start), Err: err}
		r.Steps = append(r.Steps, s)
		ev := log.Info()
		if err != nil {
			ev = log.Warn().Err(err)
		}
		ev.Str("step", name).Dur("took", s.Took).Msg("shutdown step")
	}

	step(StepMarkDraining, func() error { return p.call(ctx, p.MarkDraining) })
	step(StepPropagate, func() error {
		if p.PropagationDelay < 0 {
			return ctx.Err()
		}
		return p.Clock.Sleep(ctx, p.PropagationDelay)
	})
	step(StepDrain, func() error { return p.drain(ctx, &r) })
	r.Forced = ctx.Err() != nil
	// Deregistering is not a wait, and skipping it would leave callers
	// routing here until the heartbeat lapses, so it outlives ctx.
	step(StepDeregister, func() error { return p.call(context.WithoutCancel(ctx), p.Deregister) })

	log.Info().Int64("abandoned", r.Abandoned).Bool("forced", r.Forced).Msg("shutdown done")
	return r
}

// call runs f, if any, with ctx bounded by CallTimeout.
func (p Plan) call(ctx context.Context, f func(context.Context) error) error {
	if f == nil {
		return nil
	}
	cctx, stop := p.timeout(ctx, p.CallTimeout, ErrCallTimeout)
	defer stop()
	err := f(cctx)
	// The clock-driven timeout cancels rather than expires, so f sees
	// context.Canceled; name the real reason.
	if err != nil && errors.Is(context.Cause(cctx), ErrCallTimeout) && !errors.Is(err, ErrCallTimeout) {
		err = fmt.Errorf("%w after %v: %w", ErrCallTimeout, p.CallTimeout, err)
	}
	return err
}

// drain refuses new work and waits for the in-flight work, bounded by
// DrainTimeout and ctx.
func (p Plan) drain(ctx context.Context, r *Report) error {
	if p.Tracker == nil {
		return ctx.Err()
	}
	p.Tracker.Refuse()
	dctx, stop := p.timeout(ctx, p.DrainTimeout, ErrDrainTimeout)
	defer stop()
	if err := p.Tracker.Wait(dctx); err != nil {
		r.Abandoned = p.Tracker.InFlight()
		if errors.Is(context.Cause(dctx), ErrDrainTimeout) {
			return fmt.Errorf("%w after %v: %d still in flight", ErrDrainTimeout, p.DrainTimeout, r.Abandoned)
		}
		return err
	}
	return nil
}

// timeout is context.WithTimeout on p.Clock rather than the wall clock, so
// a fake Clock drives it too. A negative d expires at once. The returned
// stop cancels the context and joins the timer goroutine.
func (p Plan) timeout(parent context.Context, d time.Duration, cause error) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	var wg sync.WaitGroup
	wg.Go(func() {
		if p.Clock.Sleep(ctx, max(d, 0)) == nil {
			cancel(cause)
		}
	})
	return ctx, func() {
		cancel(nil)
		wg.Wait()
	}
}
