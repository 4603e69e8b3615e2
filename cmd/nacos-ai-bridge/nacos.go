package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/balancer"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

// nacosFlags are the connection flags shared by the operator commands, with
// the usual environment variables as defaults.
type nacosFlags struct {
	addr, namespace, group, user, pass string
}

func (n *nacosFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.addr, "nacos", os.Getenv("NACOS_ADDR"), "Nacos server address(es), comma-separated (env NACOS_ADDR)")
	fs.StringVar(&n.namespace, "namespace", os.Getenv("NACOS_NAMESPACE"), "namespace ID (env NACOS_NAMESPACE)")
	fs.StringVar(&n.group, "group", "AI_SERVICE", "service group")
	n.user, n.pass = os.Getenv("NACOS_USERNAME"), os.Getenv("NACOS_PASSWORD") // never a flag: flags show in ps
}

func (n *nacosFlags) options() (nacosreg.Options, func(), error) {
	if n.addr == "" {
		return nacosreg.Options{}, nil, fmt.Errorf("no Nacos address: set -nacos or NACOS_ADDR")
	}
	dir, err := os.MkdirTemp("", "nacos-ai-bridge-cli-")
	if err != nil {
		return nacosreg.Options{}, nil, err
	}
	return nacosreg.Options{
		Servers: strings.Split(n.addr, ","), Namespace: n.namespace, Group: n.group,
		Username: n.user, Password: n.pass, Logger: zerolog.Nop(),
		CacheDir: filepath.Join(dir, "cache"), LogDir: filepath.Join(dir, "log"),
	}, func() { os.RemoveAll(dir) }, nil
}

// watchOnce subscribes to service and returns a balancer holding its first
// instance list.
func watchOnce(n *nacosFlags, service string, wait time.Duration) (*balancer.Watched, func(), error) {
	o, cleanup, err := n.options()
	if err != nil {
		return nil, nil, err
	}
	w, err := balancer.Connect(o, service, n.group, balancer.Options{Service: service, SlowStart: -1})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	deadline := time.Now().Add(wait)
	for len(w.Endpoints()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return w, func() { w.Close(); cleanup() }, nil
}

// serviceCommand parses the flags of a command that takes one SERVICE and
// returns a balancer holding that service's instances.
func serviceCommand(name, what string, args []string, stderr io.Writer, n *nacosFlags, extra func(*flag.FlagSet)) (*flag.FlagSet, *balancer.Watched, func(), error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	n.register(fs)
	if extra != nil {
		extra(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: nacos-ai-bridge %s [flags] SERVICE\n\n%s\n\n", name, what)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return nil, nil, nil, errUsage
	}
	w, closeFn, err := watchOnce(n, fs.Arg(0), 3*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "nacos-ai-bridge:", err)
		return nil, nil, nil, err
	}
	return fs, w, closeFn, nil
}

func instancesCmd(args []string, stdout, stderr io.Writer) error {
	var n nacosFlags
	fs, w, closeFn, err := serviceCommand("instances", "Lists the instances Nacos holds for SERVICE with their decoded metadata and\nthe cost the balancer would give them (lower is picked first).",
		args, stderr, &n, nil)
	if err != nil {
		return err
	}
	defer closeFn()
	eps := append([]*balancer.Endpoint(nil), w.Endpoints()...)
	sort.Slice(eps, func(i, j int) bool { return eps[i].Addr < eps[j].Addr })
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tNACOS\tLIFECYCLE\tWARM\tHEALTH\tGPU\tVRAM FREE/TOTAL MiB\tQUEUE\tINFLIGHT\tP95 ms\tMODELS\tCONFIG\tAGE\tROUTABLE\tCOST")
	now := time.Now()
	for _, e := range eps {
		m := e.Meta
		nacos := "enabled"
		if !e.Enabled {
			nacos = "disabled"
		}
		if !e.Healthy {
			nacos += ",unhealthy"
		}
		health := tri(m.InferenceHealthy) + "/" + tri(m.GPUHealthy)
		age := "-"
		if m.UpdatedAt.Set {
			age = now.Sub(time.Unix(m.UpdatedAt.V, 0)).Round(time.Second).String()
		}
		models := strings.Join(m.LoadedModels, ",")
		if m.LoadedModelsMore > 0 {
			models += fmt.Sprintf(",+%d", m.LoadedModelsMore)
		}
		cost, routable := w.Cost(e, now)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s\n",
			e.Addr, nacos, or(string(m.Lifecycle)), or(string(m.Warm)), health, gpuDesc(m),
			num(m.GPUMemAvailable), num(m.GPUMemTotal), num(m.QueueDepth), num(m.Inflight), num(m.LatencyP95),
			or(models), or(m.ConfigRev), age, routable, costStr(cost, routable))
	}
	tw.Flush()
	if len(eps) == 0 {
		fmt.Fprintf(stderr, "no instances of %s in group %s\n", fs.Arg(0), n.group)
	}
	return nil
}

func pickCmd(args []string, stdout, stderr io.Writer) error {
	var n nacosFlags
	var model, task *string
	_, w, closeFn, err := serviceCommand("pick", "Prints host:port of one balancer pick (for scripts); exit 1 when none.", args, stderr, &n,
		func(fs *flag.FlagSet) {
			model = fs.String("model", "", "model the request needs")
			task = fs.String("task", "", "task the request needs (generation, embedding, ...)")
		})
	if err != nil {
		return err
	}
	defer closeFn()
	e, done, err := w.Pick(context.Background(), balancer.Request{Model: *model, Task: *task})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return err
	}
	done.Report(balancer.Result{})
	fmt.Fprintln(stdout, e.Addr)
	return nil
}

func tri(t metadata.Tri) string {
	switch t {
	case metadata.True:
		return "ok"
	case metadata.False:
		return "FAIL"
	}
	return "?"
}

func num(i metadata.Int) string {
	if !i.Set {
		return "?"
	}
	return fmt.Sprint(i.V)
}

func or(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func gpuDesc(m metadata.Instance) string {
	if m.GPUModel == "" {
		return "-"
	}
	s := m.GPUModel
	if m.GPUCount.Set {
		s = fmt.Sprintf("%dx %s", m.GPUCount.V, s)
	}
	if m.GPUMixed {
		s += " (mixed)"
	}
	return s
}

func costStr(c float64, routable bool) string {
	if !routable {
		return "-"
	}
	return fmt.Sprintf("%.1f", c)
}
