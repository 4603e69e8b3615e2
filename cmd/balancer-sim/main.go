// Command balancer-sim runs the fleet simulation of package balancer/sim:
// every balancing policy and the oracle on the same seeded workload, and
// prints the comparison table and the default policy's goals.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/balancer/sim"
)

func main() {
	minutes := flag.Float64("minutes", 10, "simulated minutes of arrivals")
	seed := flag.Uint64("seed", 1, "random seed")
	policies := flag.String("policies", strings.Join(sim.Policies(), ","), "comma-separated policies to compare")
	flag.Parse()
	if err := run(*minutes, *seed, strings.Split(*policies, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "balancer-sim:", err)
		os.Exit(1)
	}
}

func run(minutes float64, seed uint64, policies []string) error {
	cfg := sim.DefaultConfig(seed, time.Duration(minutes*float64(time.Minute)))
	fmt.Printf("fleet: %d instances (speeds %v), %d slots each, lognormal service mean %v sigma %g\n",
		len(cfg.Speeds), cfg.Speeds, cfg.Slots, cfg.MeanService, cfg.Sigma)
	fmt.Printf("load: %.1f req/s (%.0f%% of %.1f) from %d clients for %v, seed %d\n",
		cfg.Rate(), 100*cfg.Load, cfg.Capacity(), cfg.Clients, cfg.Duration, seed)
	fmt.Printf("events: instance %d restarts at %v; instance %d is %gx slower from %v for %v\n\n",
		cfg.Restart.Instance, cfg.Restart.At, cfg.Slowdown.Instance, cfg.Slowdown.Factor, cfg.Slowdown.At, cfg.Slowdown.For)
	start := time.Now()
	rs, err := sim.Compare(cfg, policies)
	if err != nil {
		return err
	}
	if err := sim.WriteTable(os.Stdout, rs); err != nil {
		return err
	}
	fmt.Println()
	if err := sim.WriteGoals(os.Stdout, sim.Goals(rs)); err != nil {
		return err
	}
	fmt.Printf("\n(%v real time)\n", time.Since(start).Round(time.Millisecond))
	return nil
}
