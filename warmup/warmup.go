package warmup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Config tunes a warm-up. The zero value of each field means its default;
// WithDefaults fills them in and Validate rejects the impossible.
type Config struct {
	// Rounds is how many inferences one warm-up runs (default 20): enough
	// for the first slow requests to pass and for a p95 to mean something.
	Rounds int
	// RoundTimeout bounds one round (default 30 s). A round that takes
	// longer counts as failed, whether or not its Func gave up.
	RoundTimeout time.Duration
	// Total bounds one warm-up (default 5 min), so a backend that is merely
	// slow cannot hold the instance out of rotation without a verdict; the
	// warm-up stops and fails when it is spent.
	Total time.Duration
	// MinSuccess is the share of rounds, in (0, 1], that must succeed
	// (default 0.9). At least one round must succeed whatever the share.
	MinSuccess float64
	// TargetP95, when positive, also requires the p95 latency of the
	// successful rounds in the last half of the warm-up to be at most this:
	// the first half is expected to be slow while the model warms, so it
	// does not count. Zero means no latency condition.
	TargetP95 time.Duration
	// Backoff is Until's first wait after a failed warm-up (default 5 s);
	// each further failure doubles it, up to MaxBackoff (default 2 min).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Jitter, when set, returns a value in [0, 1) that shortens each
	// back-off by up to a fifth, so instances that failed together do not
	// retry in lockstep (pass rand.Float64). Nil means no jitter, which
	// keeps tests exact.
	Jitter func() float64
}

// Defaults.
const (
	DefaultRounds       = 20
	DefaultRoundTimeout = 30 * time.Second
	DefaultTotal        = 5 * time.Minute
	DefaultMinSuccess   = 0.9
	DefaultBackoff      = 5 * time.Second
	DefaultMaxBackoff   = 2 * time.Minute
)

// WithDefaults returns c with its zero fields set to their defaults. It
// leaves negative and out-of-range values alone for Validate to report.
func (c Config) WithDefaults() Config {
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	if c.RoundTimeout == 0 {
		c.RoundTimeout = DefaultRoundTimeout
	}
	if c.Total == 0 {
		c.Total = DefaultTotal
	}
	if c.MinSuccess == 0 {
		c.MinSuccess = DefaultMinSuccess
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = max(DefaultMaxBackoff, c.Backoff)
	}
	return c
}

// Validate reports every impossible value in c, after defaults, as one
// error whose lines are prefixed "warmup: ". Zero values are valid: they
// mean the default.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("warmup: "+format, a...)) }
	if c.Rounds < 0 {
		bad("rounds must be positive, got %d", c.Rounds)
	}
	if c.RoundTimeout < 0 {
		bad("round timeout must be positive, got %v", c.RoundTimeout)
	}
	if c.Total < 0 {
		bad("total must be positive, got %v", c.Total)
	}
	if !(c.MinSuccess > 0 && c.MinSuccess <= 1) { // also rejects NaN
		bad("min success must be a share in (0, 1], got %v", c.MinSuccess)
	}
	if c.TargetP95 < 0 {
		bad("target p95 must not be negative, got %v", c.TargetP95)
	}
	if c.Backoff < 0 {
		bad("backoff must be positive, got %v", c.Backoff)
	}
	if c.MaxBackoff < 0 {
		bad("max backoff must be positive, got %v", c.MaxBackoff)
	} else if c.Backoff > 0 && c.MaxBackoff < c.Backoff {
		bad("max backoff %v is below backoff %v", c.MaxBackoff, c.Backoff)
	}
	return errors.Join(errs...)
}

// needed is how many rounds must succeed: the share rounded up (with a
// little slack for float error, so 0.9 of 20 is 18, not 19), at least one.
func (c Config) needed() int {
	return max(1, int(math.Ceil(c.MinSuccess*float64(c.Rounds)-1e-9)))
}

// Func performs one warm-up inference on a sample input and checks its
// output; a nil error means the round succeeded. round counts from 0, so
// samples[round%len(samples)] cycles over the samples. ctx carries the
// round's deadline; Func must return promptly once ctx is done.
type Func func(ctx context.Context, round int) error

// Result is the outcome of one warm-up.
type Result struct {
	// Rounds is how many rounds ran to an outcome (a round cut short by the
	// caller's context does not count); Succeeded how many of them passed.
	Rounds, Succeeded int
	// P50 and P95 are the latencies of the successful rounds (nearest
	// rank; zero when none succeeded): the instance's baseline.
	P50, P95 time.Duration
	// TailP95 is the p95 of the successful rounds in the last half, the
	// figure compared with Config.TargetP95 (zero when none succeeded there).
	TailP95 time.Duration
	// OK says the warm-up succeeded and the instance may take traffic.
	OK bool
	// Reason says, for people, why the warm-up failed; empty when OK.
	Reason string
	// LastErr is the error of the last failed round, nil if none failed;
	// kept for errors.Is, its text is already in Reason.
	LastErr error
	// Took is how long the warm-up ran, by the Clock.
	Took time.Duration
}

// Run performs one warm-up: cfg.Rounds calls of f, one after another, each
// bounded by cfg.RoundTimeout and all by cfg.Total, timed with clk. It stops
// early when the total is spent, when too many rounds failed for
// cfg.MinSuccess to be reached, or when ctx is done. An invalid cfg fails at
// once with the validation error as Reason.
//
// A round's context carries a real deadline (context.WithTimeout), so that
// the I/O inside f is cut off; latency and the total are measured with clk,
// and a round whose measured latency is over its limit fails too.
func Run(ctx context.Context, cfg Config, f Func, clk Clock) Result {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Result{Reason: err.Error(), LastErr: err}
	}
	var (
		start  = clk.Now()
		need   = cfg.needed()
		lat    = make([]time.Duration, 0, cfg.Rounds) // successful rounds
		tail   []time.Duration                        // successful rounds in the last half
		res    Result
		failed int
		stop   stopReason
	)
	for i := range cfg.Rounds {
		if ctx.Err() != nil {
			stop = stopInterrupted
			break
		}
		// A round gets at most what is left of the total, so that the total
		// holds even when rounds are slow.
		limit, byTotal := cfg.RoundTimeout, false
		rem := cfg.Total - clk.Now().Sub(start)
		if rem <= 0 {
			stop = stopTotal
			break
		}
		if rem < limit {
			limit, byTotal = rem, true
		}
		rctx, cancel := context.WithTimeout(ctx, limit)
		t0 := clk.Now()
		err := f(rctx, i)
		d := clk.Now().Sub(t0)
		expired := rctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			// The caller gave up; this round says nothing about the backend.
			stop = stopInterrupted
			break
		}
		res.Rounds++
		// A round over its limit fails even if f ignored its context and
		// succeeded late: that latency is not fit for traffic.
		timedOut := d > limit || (err != nil && expired)
		switch {
		case timedOut && byTotal:
			err = fmt.Errorf("round %d/%d: cut off by the total %v: %w", i+1, cfg.Rounds, cfg.Total, cmpOr(err, context.DeadlineExceeded))
		case timedOut:
			err = fmt.Errorf("round %d/%d: exceeded the round timeout %v: %w", i+1, cfg.Rounds, cfg.RoundTimeout, cmpOr(err, context.DeadlineExceeded))
		case err != nil:
			err = fmt.Errorf("round %d/%d: %w", i+1, cfg.Rounds, err)
		}
		if err != nil {
			failed++
			res.LastErr = err
		} else {
			res.Succeeded++
			lat = append(lat, d)
			if i >= cfg.Rounds/2 {
				tail = append(tail, d)
			}
		}
		if timedOut && byTotal {
			stop = stopTotal
			break
		}
		// Once more rounds failed than may fail, the rest cannot change the
		// verdict; stop rather than hold the instance out for nothing.
		if failed > cfg.Rounds-need && i < cfg.Rounds-1 {
			stop = stopImpossible
			break
		}
	}
	res.Took = clk.Now().Sub(start)
	slices.Sort(lat)
	slices.Sort(tail)
	res.P50, res.P95 = quantile(lat, 0.50), quantile(lat, 0.95)
	res.TailP95 = quantile(tail, 0.95)

	needText := fmt.Sprintf("need %s (%d)", percent(cfg.MinSuccess), need)
	var reason string
	switch {
	case stop == stopInterrupted:
		reason = fmt.Sprintf("interrupted after %d of %d rounds (%d succeeded): %v",
			res.Rounds, cfg.Rounds, res.Succeeded, ctx.Err())
	case stop == stopTotal:
		reason = fmt.Sprintf("took longer than the total %v: stopped after %d of %d rounds (%d succeeded)",
			cfg.Total, res.Rounds, cfg.Rounds, res.Succeeded)
	case stop == stopImpossible:
		reason = fmt.Sprintf("stopped after %d of %d rounds: %d failed, so at most %d can succeed, %s",
			res.Rounds, cfg.Rounds, failed, cfg.Rounds-failed, needText)
	case res.Succeeded < need:
		reason = fmt.Sprintf("%d of %d rounds succeeded, %s", res.Succeeded, cfg.Rounds, needText)
	case cfg.TargetP95 > 0 && len(tail) == 0:
		reason = fmt.Sprintf("no round in the last half succeeded, so the target p95 %v is not shown to be met", cfg.TargetP95)
	case cfg.TargetP95 > 0 && res.TailP95 > cfg.TargetP95:
		reason = fmt.Sprintf("p95 of the last half is %v, over the target %v", short(res.TailP95), cfg.TargetP95)
	}
	if reason == "" {
		res.OK = true
		return res
	}
	if res.LastErr != nil {
		reason += ": last error: " + res.LastErr.Error()
	}
	res.Reason = reason
	return res
}

// stopReason says why Run ended before its last round.
type stopReason int

const (
	stopNone        stopReason = iota // every round ran
	stopInterrupted                   // the caller's context ended
	stopTotal                         // Config.Total was spent
	stopImpossible                    // too many rounds failed to reach MinSuccess
)

// Until runs warm-ups until one succeeds or ctx is done. After each it
// calls onAttempt (if not nil) with the attempt number, from 1, and the
// result, so the caller can publish the reason; after a failure it waits
// cfg.Backoff, doubling on each further failure up to cfg.MaxBackoff and
// shortened by cfg.Jitter. It returns the successful Result and nil, or the
// last Result and ctx.Err(). An invalid cfg is returned as an error at once,
// since retrying cannot fix it.
func Until(ctx context.Context, cfg Config, f Func, clk Clock, onAttempt func(attempt int, r Result)) (Result, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Result{Reason: err.Error(), LastErr: err}, err
	}
	wait := cfg.Backoff
	for attempt := 1; ; attempt++ {
		r := Run(ctx, cfg, f, clk)
		if onAttempt != nil {
			onAttempt(attempt, r)
		}
		if r.OK {
			return r, nil
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if err := clk.Sleep(ctx, jitter(wait, cfg.Jitter)); err != nil {
			return r, err
		}
		wait = min(2*wait, cfg.MaxBackoff)
	}
}

// jitter shortens d by up to a fifth; never lengthens it, so MaxBackoff
// stays a true cap.
func jitter(d time.Duration, src func() float64) time.Duration {
	if src == nil {
		return d
	}
	j := min(max(src(), 0), 1)
	return d - time.Duration(float64(d)*0.2*j)
}

// quantile is the nearest-rank q-quantile of sorted, zero when empty.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// percent formats a share for people: 0.9 as "90%", 0.875 as "87.5%".
func percent(share float64) string { return fmt.Sprintf("%.4g%%", share*100) }

// short rounds d to the millisecond for messages, unless it is below one.
func short(d time.Duration) time.Duration {
	if d >= time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d
}

// cmpOr returns a if it is not nil, else b.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
