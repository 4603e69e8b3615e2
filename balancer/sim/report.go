package sim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/balancer"
)

// Result is one policy's outcome.
type Result struct {
	Policy string
	// Sent is the number of requests that arrived; each either Completed
	// or Failed (Unroutable: no endpoint picked, a subset of Failed).
	Sent, Completed, Failed, Unroutable int
	// CompletedInWindow completed before arrivals stopped; Throughput is
	// that per second of the arrival window.
	CompletedInWindow int
	Throughput        float64
	// Client-side latency quantiles over every completed request.
	P50, P95, P99, Max time.Duration
	// ToNotReady counts requests sent to an instance whose true state was
	// not ACTIVE+ready (draining, gone, cold, warming), including those
	// sent before the change reached the client; ToNotReadyPublished
	// counts those sent although the client had been told (must be 0).
	ToNotReady, ToNotReadyPublished int
	// FilterViolations counts picks of an instance that the client's last
	// push did not show as present, ACTIVE and ready, whatever its true
	// state (must be 0; the oracle has no pushes and counts none).
	FilterViolations int
	// ToSlowed counts requests sent to the slowed instance while slow, of
	// SentDuringSlowdown sent in that time (1/12 would be its fair share).
	ToSlowed, SentDuringSlowdown int
	// Writes is the number of metadata writes by all publishers.
	Writes int
	// End is the simulated time the last request completed.
	End time.Duration
}

// find returns the result of a policy, or nil.
func find(rs []Result, policy string) *Result {
	for i := range rs {
		if rs[i].Policy == policy {
			return &rs[i]
		}
	}
	return nil
}

// WriteTable prints the results as an aligned table; the ratio columns
// compare each p99 with round robin's and the oracle's when present.
func WriteTable(w io.Writer, rs []Result) error {
	rr, or := find(rs, balancer.PolicyRoundRobin), find(rs, Oracle)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tp50 ms\tp95 ms\tp99 ms\tmax ms\treq/s\tsent\tcompleted\tfailed\tto not-ready\tafter publish\tslowed share\tp99/rr\tp99/oracle\t")
	ratio := func(a time.Duration, b *Result) string {
		if b == nil || b.P99 <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", float64(a)/float64(b.P99))
	}
	for _, r := range rs {
		share := "-"
		if r.SentDuringSlowdown > 0 {
			share = fmt.Sprintf("%.1f%%", 100*float64(r.ToSlowed)/float64(r.SentDuringSlowdown))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n",
			r.Policy, r.P50.Milliseconds(), r.P95.Milliseconds(), r.P99.Milliseconds(), r.Max.Milliseconds(),
			r.Throughput, r.Sent, r.Completed, r.Failed, r.ToNotReady, r.ToNotReadyPublished, share,
			ratio(r.P99, rr), ratio(r.P99, or))
	}
	return tw.Flush()
}

// Goal is one of the targets for the default policy, evaluated on a
// comparison.
type Goal struct {
	Name   string
	Met    bool
	Detail string
}

// baselines are the policies the default must not lose to.
var baselines = []string{balancer.PolicyRoundRobin, balancer.PolicyWeightedRandom,
	balancer.PolicyLeastRequest, balancer.PolicyWLC, balancer.PolicyGPUScore}

// Goals evaluates the targets: the default policy's p99 at most
// 0.5x round robin's, at most 1.3x the oracle's and no worse than the best
// baseline; no request to a not-ready instance after the change was
// published, for every policy. Targets whose policies are missing are left
// out.
func Goals(rs []Result) []Goal {
	var gs []Goal
	ai, rr, or := find(rs, balancer.PolicyAI), find(rs, balancer.PolicyRoundRobin), find(rs, Oracle)
	if ai != nil && rr != nil {
		x := float64(ai.P99) / float64(rr.P99)
		gs = append(gs, Goal{"ai p99 <= 0.5 x round-robin p99", x <= 0.5, fmt.Sprintf("%.2fx", x)})
	}
	if ai != nil && or != nil {
		x := float64(ai.P99) / float64(or.P99)
		gs = append(gs, Goal{"ai p99 <= 1.3 x oracle p99", x <= 1.3, fmt.Sprintf("%.2fx", x)})
	}
	if ai != nil {
		var best *Result
		for _, p := range baselines {
			if r := find(rs, p); r != nil && (best == nil || r.P99 < best.P99) {
				best = r
			}
		}
		if best != nil {
			gs = append(gs, Goal{"ai p99 <= best baseline p99", ai.P99 <= best.P99,
				fmt.Sprintf("ai %d ms, best %s %d ms", ai.P99.Milliseconds(), best.Policy, best.P99.Milliseconds())})
		}
	}
	var bad []string
	for _, r := range rs {
		if n := r.ToNotReadyPublished + r.FilterViolations; n > 0 {
			bad = append(bad, fmt.Sprintf("%s %d", r.Policy, n))
		}
	}
	detail := "none"
	if len(bad) > 0 {
		detail = strings.Join(bad, ", ")
	}
	gs = append(gs, Goal{"no request to a not-ready instance after publish", len(bad) == 0, detail})
	return gs
}

// WriteGoals prints the goals, one a line.
func WriteGoals(w io.Writer, gs []Goal) error {
	for _, g := range gs {
		mark := "MET   "
		if !g.Met {
			mark = "MISSED"
		}
		if _, err := fmt.Fprintf(w, "%s %s (%s)\n", mark, g.Name, g.Detail); err != nil {
			return err
		}
	}
	return nil
}
