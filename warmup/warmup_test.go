package warmup

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock moves only when told: a Func advances it to simulate latency,
// and Sleep advances it by the requested duration at once, recording it.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

var _ Clock = (*fakeClock)(nil)

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.slept)
}

var errBoom = errors.New("boom")

// steps is a Func whose round i takes lat(i) on clk and returns err(i).
func steps(clk *fakeClock, fn func(i int) (time.Duration, error)) Func {
	return func(ctx context.Context, i int) error {
		d, err := fn(i)
		clk.Advance(d)
		return err
	}
}

// block is a round that waits for its context, like an inference that hangs.
func block(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestRun(t *testing.T) {
	type env struct {
		clk    *fakeClock
		cancel context.CancelFunc
	}
	tests := []struct {
		name string
		cfg  Config
		f    func(e env) Func
		// want
		rounds, succeeded int
		ok                bool
		p50, p95, tailP95 time.Duration // checked when non-zero
		took              time.Duration // checked when non-zero
		reason            []string      // substrings of Reason, in order
		errIs             error         // errors.Is(LastErr, errIs) when not nil
	}{
		{
			name: "all rounds succeed",
			f: func(e env) Func {
				return steps(e.clk, func(int) (time.Duration, error) { return ms(10), nil })
			},
			rounds: 20, succeeded: 20, ok: true,
			p50: ms(10), p95: ms(10), tailP95: ms(10), took: ms(200),
		},
		{
			name: "too many failures at the end",
			cfg:  Config{MinSuccess: 1},
			f: func(e env) Func {
				return steps(e.clk, func(i int) (time.Duration, error) {
					if i == 19 {
						return ms(10), errBoom
					}
					return ms(10), nil
				})
			},
			rounds: 20, succeeded: 19,
			reason: []string{"19 of 20 rounds succeeded, need 100% (20)", "last error: round 20/20: boom"},
			errIs:  errBoom,
		},
		{
			name: "early stop when success is impossible",
			// Default: need 18 of 20, so the third failure ends it.
			f: func(e env) Func {
				return steps(e.clk, func(i int) (time.Duration, error) {
					if i%2 == 1 {
						return ms(10), errBoom
					}
					return ms(10), nil
				})
			},
			rounds: 6, succeeded: 3,
			reason: []string{"stopped after 6 of 20 rounds: 3 failed, so at most 17 can succeed, need 90% (18)", "last error: round 6/20: boom"},
			errIs:  errBoom,
		},
		{
			name: "round blocking past RoundTimeout fails, the rest pass",
			cfg:  Config{Rounds: 4, MinSuccess: 0.75, RoundTimeout: 20 * time.Millisecond},
			f: func(e env) Func {
				return func(ctx context.Context, i int) error {
					if i == 1 {
						return block(ctx)
					}
					e.clk.Advance(ms(5))
					return nil
				}
			},
			rounds: 4, succeeded: 3, ok: true, errIs: context.DeadlineExceeded,
		},
		{
			name: "rounds blocking past RoundTimeout stop the warm-up",
			cfg:  Config{Rounds: 4, MinSuccess: 0.75, RoundTimeout: 20 * time.Millisecond},
			f: func(e env) Func {
				return func(ctx context.Context, i int) error {
					if i > 0 {
						return block(ctx)
					}
					return nil
				}
			},
			rounds: 3, succeeded: 1,
			reason: []string{"stopped after 3 of 4 rounds: 2 failed", "need 75% (3)", "round 3/4: exceeded the round timeout 20ms: context deadline exceeded"},
			errIs:  context.DeadlineExceeded,
		},
		{
			name: "late success over RoundTimeout counts as failed",
			cfg:  Config{Rounds: 2, MinSuccess: 0.5, RoundTimeout: time.Second},
			f: func(e env) Func {
				return steps(e.clk, func(i int) (time.Duration, error) {
					if i == 0 {
						return 2 * time.Second, nil // ignored its context
					}
					return ms(100), nil
				})
			},
			rounds: 2, succeeded: 1, ok: true, p50: ms(100), errIs: context.DeadlineExceeded,
		},
		{
			name: "total spent between rounds",
			cfg:  Config{Total: 5 * time.Minute, RoundTimeout: 2 * time.Minute},
			f: func(e env) Func {
				return steps(e.clk, func(int) (time.Duration, error) { return time.Minute, nil })
			},
			rounds: 5, succeeded: 5, took: 5 * time.Minute,
			reason: []string{"took longer than the total 5m0s: stopped after 5 of 20 rounds (5 succeeded)"},
		},
		{
			name: "total cuts a round short",
			cfg:  Config{Total: 5 * time.Minute, RoundTimeout: 3 * time.Minute},
			f: func(e env) Func {
				return steps(e.clk, func(int) (time.Duration, error) { return 2 * time.Minute, nil })
			},
			rounds: 3, succeeded: 2,
			reason: []string{"took longer than the total 5m0s: stopped after 3 of 20 rounds (2 succeeded)", "round 3/20: cut off by the total 5m0s"},
			errIs:  context.DeadlineExceeded,
		},
		{
			name: "target p95 met by the last half",
			// Rounds get faster: 1000 ms, 960 ms, ... 240 ms. The last ten
			// are 600..240 ms; over all twenty the p95 is 960 ms.
			cfg: Config{TargetP95: ms(600)},
			f: func(e env) Func {
				return steps(e.clk, func(i int) (time.Duration, error) { return ms(1000 - 40*i), nil })
			},
			rounds: 20, succeeded: 20, ok: true,
			p50: ms(600), p95: ms(960), tailP95: ms(600),
		},
		{
			name: "target p95 not met",
			cfg:  Config{TargetP95: ms(599)},
			f: func(e env) Func {
				return steps(e.clk, func(i int) (time.Duration, error) { return ms(1000 - 40*i), nil })
			},
			rounds: 20, succeeded: 20, tailP95: ms(600),
			reason: []string{"p95 of the last half is 600ms, over the target 599ms"},
		},
		{
			name: "target p95 with no success in the last half",
			cfg:  Config{Rounds: 4, MinSuccess: 0.5, TargetP95: time.Second},
			f: func(e env) Func {
				return steps(e.clk, func(i int) (time.Duration, error) {
					if i >= 2 {
						return ms(10), errBoom
					}
					return ms(10), nil
				})
			},
			rounds: 4, succeeded: 2,
			reason: []string{"no round in the last half succeeded", "last error: round 4/4: boom"},
		},
		{
			name: "p50 and p95 over successful rounds only, nearest rank",
			// Successes take 1..20 ms in scrambled order; failures take 1 s
			// and must not count.
			cfg: Config{Rounds: 22, MinSuccess: 0.5},
			f: func(e env) Func {
				return steps(e.clk, func(i int) (time.Duration, error) {
					if i >= 20 {
						return time.Second, errBoom
					}
					return ms((i*7)%20 + 1), nil
				})
			},
			rounds: 22, succeeded: 20, ok: true, p50: ms(10), p95: ms(19),
		},
		{
			name: "caller cancels mid-round",
			f: func(e env) Func {
				return func(ctx context.Context, i int) error {
					if i == 2 {
						e.cancel()
						return ctx.Err()
					}
					return nil
				}
			},
			rounds: 2, succeeded: 2,
			reason: []string{"interrupted after 2 of 20 rounds (2 succeeded): context canceled"},
		},
		{
			name: "invalid config",
			cfg:  Config{Rounds: -1},
			f: func(e env) Func {
				return func(context.Context, int) error { panic("must not run") }
			},
			reason: []string{"warmup: rounds must be positive, got -1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			clk := newFakeClock()
			inner := tt.f(env{clk: clk, cancel: cancel})
			var seen []int
			f := func(ctx context.Context, i int) error {
				seen = append(seen, i)
				if _, ok := ctx.Deadline(); !ok {
					t.Errorf("round %d: context without deadline", i)
				}
				return inner(ctx, i)
			}
			r := Run(ctx, tt.cfg, f, clk)

			if r.Rounds != tt.rounds || r.Succeeded != tt.succeeded || r.OK != tt.ok {
				t.Errorf("got rounds=%d succeeded=%d ok=%v, want %d %d %v (reason %q)",
					r.Rounds, r.Succeeded, r.OK, tt.rounds, tt.succeeded, tt.ok, r.Reason)
			}
			// Rounds are numbered from 0 and run in order; a cancelled
			// round was called but not counted.
			if n := len(seen); n < r.Rounds || !slices.Equal(seen, seqInts(n)) {
				t.Errorf("rounds called %v, counted %d", seen, r.Rounds)
			}
			if r.OK != (r.Reason == "") {
				t.Errorf("OK=%v with reason %q", r.OK, r.Reason)
			}
			rest := r.Reason
			for _, s := range tt.reason {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Errorf("reason %q lacks %q (in order)", r.Reason, s)
					break
				}
				rest = rest[i+len(s):]
			}
			t.Logf("reason: %s", r.Reason)
			if tt.errIs != nil && !errors.Is(r.LastErr, tt.errIs) {
				t.Errorf("LastErr %v is not %v", r.LastErr, tt.errIs)
			}
			for _, c := range []struct {
				name      string
				got, want time.Duration
			}{{"p50", r.P50, tt.p50}, {"p95", r.P95, tt.p95}, {"tail p95", r.TailP95, tt.tailP95}, {"took", r.Took, tt.took}} {
				if c.want != 0 && c.got != c.want {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			if r.P50 > r.P95 {
				t.Errorf("p50 %v above p95 %v", r.P50, r.P95)
			}
		})
	}
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestQuantile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1)
	}
	tests := []struct {
		name     string
		sorted   []time.Duration
		p50, p95 time.Duration
	}{
		{"empty", nil, 0, 0},
		{"one", []time.Duration{ms(7)}, ms(7), ms(7)},
		{"two", []time.Duration{ms(1), ms(2)}, ms(1), ms(2)},
		{"twenty", hundred[:20], ms(10), ms(19)},
		{"hundred", hundred, ms(50), ms(95)},
	}
	for _, tt := range tests {
		if got := quantile(tt.sorted, 0.5); got != tt.p50 {
			t.Errorf("%s: p50 = %v, want %v", tt.name, got, tt.p50)
		}
		if got := quantile(tt.sorted, 0.95); got != tt.p95 {
			t.Errorf("%s: p95 = %v, want %v", tt.name, got, tt.p95)
		}
	}
}

// failing is a Func whose first n calls fail and the rest succeed.
func failing(n int) (Func, *int) {
	calls := 0
	return func(context.Context, int) error {
		calls++
		if calls <= n {
			return errBoom
		}
		return nil
	}, &calls
}

func TestUntil(t *testing.T) {
	s := time.Second
	tests := []struct {
		name      string
		cfg       Config
		failCalls int
		cancelAt  int // cancel the context in onAttempt of this attempt; 0 = never
		attempts  int
		slept     []time.Duration
		wantErr   error
	}{
		{
			name: "first attempt succeeds",
			cfg:  Config{Rounds: 2, MinSuccess: 1, Backoff: s, MaxBackoff: 5 * s},
			// Each failed attempt stops after its first round.
			failCalls: 0, attempts: 1, slept: nil,
		},
		{
			name:      "retries with growing, capped back-off, then succeeds",
			cfg:       Config{Rounds: 2, MinSuccess: 1, Backoff: s, MaxBackoff: 5 * s},
			failCalls: 5, attempts: 6, slept: []time.Duration{s, 2 * s, 4 * s, 5 * s, 5 * s},
		},
		{
			name:      "jitter shortens each wait by up to a fifth",
			cfg:       Config{Rounds: 2, MinSuccess: 1, Backoff: s, MaxBackoff: 5 * s, Jitter: func() float64 { return 0.5 }},
			failCalls: 3, attempts: 4, slept: []time.Duration{900 * time.Millisecond, 1800 * time.Millisecond, 3600 * time.Millisecond},
		},
		{
			name:      "default back-off",
			cfg:       Config{Rounds: 2, MinSuccess: 1},
			failCalls: 7, attempts: 8,
			slept: []time.Duration{5 * s, 10 * s, 20 * s, 40 * s, 80 * s, 120 * s, 120 * s},
		},
		{
			name:      "stops when the context is cancelled",
			cfg:       Config{Rounds: 2, MinSuccess: 1, Backoff: s, MaxBackoff: 5 * s},
			failCalls: 100, cancelAt: 3, attempts: 3, slept: []time.Duration{s, 2 * s},
			wantErr: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			clk := newFakeClock()
			f, _ := failing(tt.failCalls)
			var attempts []int
			r, err := Until(ctx, tt.cfg, f, clk, func(a int, r Result) {
				attempts = append(attempts, a)
				if a == tt.cancelAt {
					cancel()
				}
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if r.OK != (err == nil) {
				t.Errorf("OK=%v with err %v", r.OK, err)
			}
			want := seqInts(tt.attempts + 1)[1:] // 1..attempts
			if !slices.Equal(attempts, want) {
				t.Errorf("attempts %v, want 1..%d", attempts, tt.attempts)
			}
			if got := clk.Slept(); !slices.Equal(got, tt.slept) {
				t.Errorf("slept %v, want %v", got, tt.slept)
			}
		})
	}
}

func TestUntilCancelledDuringRun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	clk := newFakeClock()
	f := func(ctx context.Context, i int) error {
		if i == 3 {
			cancel()
			return ctx.Err()
		}
		return nil
	}
	r, err := Until(ctx, Config{}, f, clk, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if r.Rounds != 3 || !strings.Contains(r.Reason, "interrupted after 3 of 20 rounds") {
		t.Errorf("rounds %d, reason %q", r.Rounds, r.Reason)
	}
	if len(clk.Slept()) != 0 {
		t.Errorf("slept %v after cancel", clk.Slept())
	}
}

func TestUntilRealClockCancelledDuringBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f, _ := failing(math.MaxInt)
	start := time.Now()
	_, err := Until(ctx, Config{Rounds: 1, Backoff: time.Hour}, f, RealClock{}, func(int, Result) {
		time.AfterFunc(20*time.Millisecond, cancel)
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to notice the cancel", d)
	}
}

func TestUntilInvalidConfig(t *testing.T) {
	f := func(context.Context, int) error { panic("must not run") }
	_, err := Until(t.Context(), Config{MinSuccess: 2}, f, newFakeClock(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "warmup: min success") {
		t.Fatalf("err = %v", err)
	}
}

func TestRealClock(t *testing.T) {
	var c RealClock
	if d := time.Since(c.Now()); d < 0 || d > time.Second {
		t.Errorf("Now is %v off", d)
	}
	if err := c.Sleep(t.Context(), time.Millisecond); err != nil {
		t.Errorf("Sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a cancelled context: %v", err)
	}
	if err := c.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("zero Sleep on a cancelled context: %v", err)
	}
}

func TestConfig(t *testing.T) {
	d := Config{}.WithDefaults()
	want := Config{Rounds: 20, RoundTimeout: 30 * time.Second, Total: 5 * time.Minute, MinSuccess: 0.9,
		Backoff: 5 * time.Second, MaxBackoff: 2 * time.Minute}
	if d.Rounds != want.Rounds || d.RoundTimeout != want.RoundTimeout || d.Total != want.Total ||
		d.MinSuccess != want.MinSuccess || d.TargetP95 != 0 || d.Backoff != want.Backoff || d.MaxBackoff != want.MaxBackoff {
		t.Errorf("defaults %+v, want %+v", d, want)
	}
	if n := d.needed(); n != 18 {
		t.Errorf("needed = %d, want 18", n)
	}

	tests := []struct {
		name string
		cfg  Config
		want []string // one line per problem; nil = valid
	}{
		{"zero is all defaults", Config{}, nil},
		{"explicit and valid", Config{Rounds: 3, RoundTimeout: time.Second, Total: time.Minute, MinSuccess: 1,
			TargetP95: time.Second, Backoff: time.Second, MaxBackoff: time.Second}, nil},
		{"long backoff raises the default cap", Config{Backoff: 10 * time.Minute}, nil},
		{"negative rounds", Config{Rounds: -1}, []string{"warmup: rounds must be positive, got -1"}},
		{"negative round timeout", Config{RoundTimeout: -time.Second}, []string{"warmup: round timeout must be positive, got -1s"}},
		{"negative total", Config{Total: -time.Second}, []string{"warmup: total must be positive, got -1s"}},
		{"share above one", Config{MinSuccess: 1.5}, []string{"warmup: min success must be a share in (0, 1], got 1.5"}},
		{"negative share", Config{MinSuccess: -0.1}, []string{"warmup: min success must be a share in (0, 1], got -0.1"}},
		{"NaN share", Config{MinSuccess: math.NaN()}, []string{"warmup: min success must be a share in (0, 1], got NaN"}},
		{"negative target", Config{TargetP95: -time.Millisecond}, []string{"warmup: target p95 must not be negative, got -1ms"}},
		{"negative backoff", Config{Backoff: -time.Second}, []string{"warmup: backoff must be positive, got -1s"}},
		{"negative max backoff", Config{MaxBackoff: -time.Second}, []string{"warmup: max backoff must be positive, got -1s"}},
		{"cap below backoff", Config{Backoff: time.Minute, MaxBackoff: time.Second}, []string{"warmup: max backoff 1s is below backoff 1m0s"}},
		{"every problem reported", Config{Rounds: -2, MinSuccess: 2}, []string{
			"warmup: rounds must be positive, got -2",
			"warmup: min success must be a share in (0, 1], got 2",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %+v", tt.cfg)
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("Validate = %q, want %q", got, tt.want)
			}
		})
	}
}
