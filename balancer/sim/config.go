package sim

import (
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/balancer"
)

// Oracle is the policy name of the central dispatcher that knows every
// instance's true remaining work; it is the lower bound in the table.
const Oracle = "oracle"

// Policies returns every policy the simulation compares, the default first
// and the oracle last.
func Policies() []string {
	return []string{balancer.PolicyAI, balancer.PolicyRoundRobin, balancer.PolicyWeightedRandom,
		balancer.PolicyLeastRequest, balancer.PolicyWLC, balancer.PolicyGPUScore, Oracle}
}

// Config describes the fleet, the workload and the scripted events.
type Config struct {
	// Seed drives every random choice: the workload, push delays,
	// publisher phases and the balancers' own randomness.
	Seed uint64
	// Duration is how long requests arrive; the run continues until the
	// last one completes.
	Duration time.Duration
	// Clients is the number of independent clients, each with its own
	// Balancer.
	Clients int
	// Speeds holds one speed factor per instance (1 = MeanService).
	Speeds []float64
	// Slots is each instance's concurrency (published as max.concurrent);
	// requests beyond it wait in a FIFO queue.
	Slots int
	// MeanService and Sigma shape the lognormal service time at speed 1.
	MeanService time.Duration
	Sigma       float64
	// Load is the arrival rate as a share of the fleet's nominal capacity.
	Load float64
	// Model is the model every instance serves and every request asks for.
	Model string
	// PublishEvery is the bridge's health cycle.
	PublishEvery time.Duration
	// PushDelayMin and PushDelayMax bound the uniform delay between a
	// registry change and its push to a client.
	PushDelayMin, PushDelayMax time.Duration
	// LatencyWindow is how far back the published p50/p95 look.
	LatencyWindow time.Duration
	// Restart and Slowdown are the scripted events.
	Restart  Restart
	Slowdown Slowdown
}

// Restart scripts one instance's drain, restart and warm-up.
type Restart struct {
	On       bool
	Instance int
	// At is when the instance publishes DRAINING.
	At time.Duration
	// DrainGrace is the least time it keeps serving after DRAINING (longer
	// than the push delay, so stragglers are served, not refused);
	// DrainTimeout is when whatever is left fails.
	DrainGrace, DrainTimeout time.Duration
	// Downtime is how long it is gone from the registry.
	Downtime time.Duration
	// ColdFor is how long it stays cold after coming back before warming;
	// WarmUp is how long after coming back it turns ACTIVE and ready.
	ColdFor, WarmUp time.Duration
	// WarmFactor multiplies the service time of requests it serves before
	// it is ready.
	WarmFactor float64
}

// Slowdown scripts one instance turning slow for a while.
type Slowdown struct {
	On       bool
	Instance int
	At, For  time.Duration
	Factor   float64
}

// DefaultConfig is the scenario: 12 instances (4 at speed 1.0,
// 4 at 0.6, 4 at 0.3) with 8 slots, lognormal service (mean 400 ms, sigma
// 1), 8 clients at 80% of capacity, 5 s publishing, 0.5-1 s pushes; a
// medium instance restarts at 30% of the run and a fast one turns 5x slower
// at 60% for 60 s (less in short runs). The restarting instance is a medium
// one and the events do not overlap so that the fleet stays under capacity
// throughout (a fast one slowed and another fast one gone would leave less
// capacity than the offered load).
func DefaultConfig(seed uint64, d time.Duration) Config {
	return Config{
		Seed: seed, Duration: d, Clients: 8,
		Speeds:      []float64{1, 1, 1, 1, 0.6, 0.6, 0.6, 0.6, 0.3, 0.3, 0.3, 0.3},
		Slots:       8,
		MeanService: 400 * time.Millisecond, Sigma: 1, Load: 0.8, Model: "llm",
		PublishEvery: 5 * time.Second, PushDelayMin: 500 * time.Millisecond, PushDelayMax: time.Second,
		LatencyWindow: 30 * time.Second,
		Restart: Restart{On: true, Instance: 5, At: d * 3 / 10,
			DrainGrace: 3 * time.Second, DrainTimeout: 60 * time.Second, Downtime: 5 * time.Second,
			ColdFor: 2 * time.Second, WarmUp: 20 * time.Second, WarmFactor: 3},
		Slowdown: Slowdown{On: true, Instance: 1, At: d * 6 / 10, For: min(60*time.Second, d/5), Factor: 5},
	}
}

// Capacity is the fleet's nominal throughput in requests per second.
func (c Config) Capacity() float64 {
	total := 0.0
	for _, s := range c.Speeds {
		total += float64(c.Slots) * s / c.MeanService.Seconds()
	}
	return total
}

// Rate is the total arrival rate in requests per second.
func (c Config) Rate() float64 { return c.Load * c.Capacity() }
