package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/balancer"
)

// shortConfig is the scenario over 60 simulated seconds, which
// still holds the restart (drain, cold, warm-up, ready) and the slowdown.
func shortConfig(seed uint64) Config { return DefaultConfig(seed, time.Minute) }

// testPolicies is every policy, less wlc under the race detector (see
// raceEnabled).
func testPolicies(t *testing.T) []string {
	var ps []string
	for _, p := range Policies() {
		if raceEnabled && p == balancer.PolicyWLC {
			t.Logf("%s skipped under -race (too slow there); run without -race to cover it", p)
			continue
		}
		ps = append(ps, p)
	}
	return ps
}

// TestCompareSanity runs every policy on the short scenario and checks what
// must hold whatever the policy: every request accounted for, none to a
// not-ready instance after the client was told, the oracle never to a
// not-ready one; the table is logged, the goals are reported, not asserted.
func TestCompareSanity(t *testing.T) {
	cfg := shortConfig(1)
	rs, err := Compare(cfg, testPolicies(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, rs); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\n")
	if err := WriteGoals(&buf, Goals(rs)); err != nil {
		t.Fatal(err)
	}
	t.Logf("short scenario (%v, seed 1):\n%s", cfg.Duration, buf.String())

	want := int(cfg.Rate() * cfg.Duration.Seconds())
	for _, r := range rs {
		if r.Sent < want*9/10 || r.Sent > want*11/10 {
			t.Errorf("%s: sent %d, want about %d", r.Policy, r.Sent, want)
		}
		if r.Completed+r.Failed != r.Sent {
			t.Errorf("%s: completed %d + failed %d != sent %d", r.Policy, r.Completed, r.Failed, r.Sent)
		}
		if r.Failed != 0 || r.Unroutable != 0 {
			t.Errorf("%s: %d failed (%d unroutable), want 0: drains outlast the push delay", r.Policy, r.Failed, r.Unroutable)
		}
		if r.ToNotReadyPublished != 0 || r.FilterViolations != 0 {
			t.Errorf("%s: %d requests to a not-ready instance after publish, %d picks against the pushed state",
				r.Policy, r.ToNotReadyPublished, r.FilterViolations)
		}
		if r.P50 <= 0 || r.P50 > r.P95 || r.P95 > r.P99 || r.P99 > r.Max {
			t.Errorf("%s: quantiles out of order: %v %v %v %v", r.Policy, r.P50, r.P95, r.P99, r.Max)
		}
		if r.Writes == 0 || r.SentDuringSlowdown == 0 {
			t.Errorf("%s: %d writes, %d sent during the slowdown: scenario did not run", r.Policy, r.Writes, r.SentDuringSlowdown)
		}
	}
	if or := find(rs, Oracle); or.ToNotReady != 0 {
		t.Errorf("oracle sent %d requests to not-ready instances", or.ToNotReady)
	}
}

// TestDeterministic checks that one seed gives identical results and that
// another seed gives different ones.
func TestDeterministic(t *testing.T) {
	cfg := shortConfig(7)
	for _, p := range []string{balancer.PolicyAI, balancer.PolicyLeastRequest} {
		a, err := Run(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Run(cfg, p)
		if a != b {
			t.Errorf("%s: same seed, different results:\n%+v\n%+v", p, a, b)
		}
		c, _ := Run(shortConfig(8), p)
		if a == c {
			t.Errorf("%s: seeds 7 and 8 gave identical results", p)
		}
	}
}

func TestInvalidConfig(t *testing.T) {
	cfg := shortConfig(1)
	cfg.Speeds = nil
	if _, err := Run(cfg, balancer.PolicyAI); err == nil {
		t.Error("no instances: want an error")
	}
	cfg = shortConfig(1)
	cfg.Restart.Instance = 99
	if _, err := Run(cfg, balancer.PolicyAI); err == nil {
		t.Error("restart of instance 99 of 12: want an error")
	}
}

func TestCapacity(t *testing.T) {
	cfg := DefaultConfig(1, time.Minute)
	// 8 slots x (4 x 2.5 + 4 x 1.5 + 4 x 0.75) req/s.
	if got := cfg.Capacity(); got < 151.99 || got > 152.01 {
		t.Errorf("capacity %.3f, want 152", got)
	}
	if got := cfg.Rate(); got < 121.59 || got > 121.61 {
		t.Errorf("rate %.3f, want 121.6", got)
	}
}
