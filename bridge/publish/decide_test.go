package publish

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

var t0 = time.Unix(1764566400, 0)

func base() metadata.Instance {
	return metadata.Instance{
		Lifecycle: metadata.Active, Warm: metadata.Ready, InferenceHealthy: metadata.True, GPUHealthy: metadata.True,
		GPUMemTotal: metadata.IntOf(81920), GPUMemAvailable: metadata.IntOf(40000), GPUUtil: metadata.IntOf(60),
		LatencyP50: metadata.IntOf(200), LatencyP95: metadata.IntOf(600), QueueDepth: metadata.IntOf(3), Inflight: metadata.IntOf(12),
		LoadedModels: []string{"m1"},
	}
}

func TestDecide(t *testing.T) {
	p := Policy{}
	written := State{Written: true, Last: base(), Enabled: true, LastWrite: t0}
	tests := []struct {
		name   string
		st     State
		mod    func(*metadata.Instance)
		en     bool
		after  time.Duration
		expect Reason
	}{
		{"first write", State{}, nil, true, 0, ReasonFirst},
		{"nothing changed", written, nil, true, time.Second, ReasonNone},
		{"lifecycle at once", written, func(i *metadata.Instance) { i.Lifecycle = metadata.Draining }, true, 10 * time.Millisecond, ReasonCritical},
		{"warm at once", written, func(i *metadata.Instance) { i.Warm = metadata.Cold }, true, 0, ReasonCritical},
		{"health at once", written, func(i *metadata.Instance) { i.InferenceHealthy = metadata.False }, true, 0, ReasonCritical},
		{"gpu health at once", written, func(i *metadata.Instance) { i.GPUHealthy = metadata.False }, true, 0, ReasonCritical},
		{"models at once", written, func(i *metadata.Instance) { i.LoadedModels = []string{"m1", "m2"} }, true, 0, ReasonCritical},
		{"config rev at once", written, func(i *metadata.Instance) { i.ConfigRev = "abc" }, true, 0, ReasonCritical},
		{"enabled flag at once", written, nil, false, 0, ReasonCritical},
		{"signal within min interval waits", written, func(i *metadata.Instance) { i.GPUUtil = metadata.IntOf(90) }, true, time.Second, ReasonNone},
		{"signal after min interval", written, func(i *metadata.Instance) { i.GPUUtil = metadata.IntOf(90) }, true, 2 * time.Second, ReasonSignals},
		{"heartbeat", written, nil, true, 30 * time.Second, ReasonHeartbeat},
		{"retry after failure", State{Written: true, Last: base(), Enabled: true, LastWrite: t0, Failed: true}, nil, true, 0, ReasonRetry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base()
			if tt.mod != nil {
				tt.mod(&d)
			}
			if got := Decide(p, tt.st, d, tt.en, t0.Add(tt.after)); got != tt.expect {
				t.Fatalf("got %q, want %q", got, tt.expect)
			}
		})
	}
}

func TestQuantize(t *testing.T) {
	i := func(v int64) metadata.Int { return metadata.IntOf(v) }
	tests := []struct {
		name      string
		prev, raw metadata.Int
		f         func(prev, raw metadata.Int) metadata.Int
		want      metadata.Int
	}{
		{"util snaps to 5", metadata.Int{}, i(62), func(p, r metadata.Int) metadata.Int { return linear(p, r, 5) }, i(60)},
		{"util within hysteresis keeps prev", i(60), i(64), func(p, r metadata.Int) metadata.Int { return linear(p, r, 5) }, i(60)},
		{"util beyond step moves", i(60), i(66), func(p, r metadata.Int) metadata.Int { return linear(p, r, 5) }, i(65)},
		{"unknown stays unknown", i(60), metadata.Int{}, func(p, r metadata.Int) metadata.Int { return linear(p, r, 5) }, metadata.Int{}},
		{"latency within 10% keeps prev", i(200), i(215), logBucket, i(200)},
		{"latency within 15% keeps prev", i(208), i(182), logBucket, i(208)},
		{"latency beyond 15% moves", i(208), i(178), logBucket, i(172)},
		{"latency bucket", metadata.Int{}, i(215), logBucket, i(208)},
		{"latency doubling moves", i(200), i(400), logBucket, i(405)},
		{"small latency exact", metadata.Int{}, i(7), logBucket, i(7)},
		{"queue exact when small", metadata.Int{}, i(2), smallBucket, i(2)},
		{"queue 3 ties down", metadata.Int{}, i(3), smallBucket, i(2)},
		{"queue 5 rounds down", metadata.Int{}, i(5), smallBucket, i(4)},
		{"queue 7 rounds up", metadata.Int{}, i(7), smallBucket, i(8)},
		{"queue jitter around 8 holds", i(8), i(14), smallBucket, i(8)},
		{"queue doubling moves", i(8), i(17), smallBucket, i(16)},
		{"queue huge", metadata.Int{}, i(5000), smallBucket, i(4096)},
		{"queue 1 to 0 holds", i(1), i(0), smallBucket, i(1)},
		{"queue 2 to 0 moves", i(2), i(0), smallBucket, i(0)},
		{"queue negative is 0", metadata.Int{}, i(-3), smallBucket, i(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f(tt.prev, tt.raw); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

type recWriter struct {
	regs      []nacosreg.Registration
	registers int
	fail      bool
}

func (w *recWriter) Register(r nacosreg.Registration) error {
	err := w.Update(r)
	if err == nil {
		w.registers++
	}
	return err
}

func (w *recWriter) Update(r nacosreg.Registration) error {
	if w.fail {
		return errors.New("nacos unreachable")
	}
	w.regs = append(w.regs, r)
	return nil
}

// jitter returns the base instance with signals jittering around a constant
// load, as a real GPU and engine report them.
func jitter(r *rand.Rand) metadata.Instance {
	d := base()
	n := func(c, spread float64) metadata.Int { return metadata.IntOf(int64(c + (r.Float64()*2-1)*spread)) }
	d.GPUMemAvailable = n(40000, 400) // ±0.5% of 80 GiB
	d.GPUUtil = n(60, 4)
	d.LatencyP50 = n(200, 12)
	d.LatencyP95 = n(600, 40)
	d.QueueDepth = n(2, 1)
	d.Inflight = n(12, 2)
	return d
}

func TestSteadyStateWritesPerMinute(t *testing.T) {
	// Ten simulated minutes of 5 s cycles under jitter: the naive publisher
	// writes 12 times a minute; this one must hold to the heartbeat.
	w := &recWriter{}
	now := t0
	p := New(w, nacosreg.Registration{Service: "s"}, Options{Now: func() time.Time { return now }})
	r := rand.New(rand.NewPCG(1, 2))
	ema := newEMA(0.3)
	for c := 0; c < 120; c++ {
		d := jitter(r)
		d.GPUUtil = metadata.IntOf(int64(ema.add(float64(d.GPUUtil.V))))
		if _, err := p.Offer(d, true); err != nil {
			t.Fatal(err)
		}
		now = now.Add(5 * time.Second)
	}
	perMin := float64(len(w.regs)) / 10
	t.Logf("steady state: %d writes in 10 simulated minutes (%.1f/min; naive: 12/min), %d skipped", len(w.regs), perMin, p.Counters().Skips)
	if perMin > 2.5 {
		t.Fatalf("%.1f writes/min under jitter", perMin)
	}
}

func TestFailedWriteRetries(t *testing.T) {
	w := &recWriter{fail: true}
	now := t0
	p := New(w, nacosreg.Registration{Service: "s"}, Options{Now: func() time.Time { return now }})
	if _, err := p.Offer(base(), true); err == nil {
		t.Fatal("want error")
	}
	now = now.Add(5 * time.Second)
	w.fail = false
	d := base()
	d.Lifecycle = metadata.Draining
	wrote, err := p.Offer(d, false)
	if err != nil || !wrote {
		t.Fatalf("retry: wrote=%v err=%v", wrote, err)
	}
	if got := w.regs[0].Metadata[metadata.KeyLifecycle]; got != "DRAINING" || w.regs[0].Enabled {
		t.Fatalf("wrote %q enabled=%v: the latest desired state must win", got, w.regs[0].Enabled)
	}
	if c := p.Counters(); c.Failures != 1 || c.Writes != 1 {
		t.Fatalf("%+v", c)
	}
	if w.registers != 1 {
		t.Fatalf("the first successful write must register; registers=%d", w.registers)
	}
}

func TestUpdatedAtOnEveryWrite(t *testing.T) {
	w := &recWriter{}
	now := t0
	p := New(w, nacosreg.Registration{Service: "s"}, Options{Now: func() time.Time { return now }})
	p.Offer(base(), true)
	now = now.Add(31 * time.Second)
	p.Offer(base(), true)
	if len(w.regs) != 2 || w.regs[1].Metadata[metadata.KeyUpdatedAt] != "1764566431" {
		t.Fatalf("%d writes, last %v", len(w.regs), w.regs[len(w.regs)-1].Metadata)
	}
}

// ema is the exponential moving average the bridge applies to utilisation.
type emaT struct {
	a, v float64
	set  bool
}

func newEMA(a float64) *emaT { return &emaT{a: a} }
func (e *emaT) add(x float64) float64 {
	if !e.set {
		e.v, e.set = x, true
	} else {
		e.v = e.a*x + (1-e.a)*e.v
	}
	return e.v
}

func BenchmarkOfferSkip(b *testing.B) {
	w := &recWriter{}
	now := t0
	p := New(w, nacosreg.Registration{Service: "s"}, Options{Now: func() time.Time { return now }})
	p.Offer(base(), true)
	b.ReportAllocs()
	for b.Loop() {
		p.Offer(base(), true)
	}
}
