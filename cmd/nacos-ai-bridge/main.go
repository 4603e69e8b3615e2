// Command nacos-ai-bridge runs beside an inference server and makes Nacos
// understand it; its subcommands also serve operators and scripts.
//
//	nacos-ai-bridge run [-config FILE]     the sidecar beside a non-Go inference server
//	nacos-ai-bridge config validate FILE   check an inference config before publishing
//	nacos-ai-bridge instances SERVICE      the operator's view of a service
//	nacos-ai-bridge pick SERVICE           one balancer pick, for scripts
//	nacos-ai-bridge version                print the version
//
// Run "nacos-ai-bridge COMMAND --help" for a command's flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `nacos-ai-bridge: run AI inference services behind Nacos

Usage:
  nacos-ai-bridge run [-config FILE]     the sidecar beside a non-Go inference server
  nacos-ai-bridge config validate FILE   check an inference config (exit 1 on problems)
  nacos-ai-bridge instances SERVICE      the instances Nacos holds, decoded, with the balancer's cost
  nacos-ai-bridge pick SERVICE           one balancer pick: host:port (for scripts)
  nacos-ai-bridge version                print the version

Run "nacos-ai-bridge COMMAND --help" for a command's flags.
`

// errUsage marks a command-line mistake (exit 2).
var errUsage = errors.New("usage")

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "config":
		err = configCmd(args[1:], stdout, stderr)
	case "run":
		err = runCmd(args[1:], stdout, stderr)
	case "instances":
		err = instancesCmd(args[1:], stdout, stderr)
	case "pick":
		err = pickCmd(args[1:], stdout, stderr)
	case "version", "--version":
		if len(args) > 1 && (args[1] == "-h" || args[1] == "--help") {
			fmt.Fprint(stdout, "Usage: nacos-ai-bridge version\n\nPrints the version: the one set at build time (-ldflags \"-X main.version=...\"),\nelse the module version, else \"devel\".\n")
			return 0
		}
		fmt.Fprintln(stdout, "nacos-ai-bridge", versionString())
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "nacos-ai-bridge: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		return 1
	}
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

func configCmd(args []string, stdout, stderr io.Writer) error {
	const help = `Usage: nacos-ai-bridge config validate FILE [FILE...]

Checks inference config files the way the bridge checks what Nacos pushes.
Several files are layered in order (fleet-wide first, then a service's).
Prints "ok rev X" or every problem found; exits 1 on problems.
`
	if len(args) == 0 || args[0] != "validate" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(stdout, help)
			return flag.ErrHelp
		}
		fmt.Fprint(stderr, help)
		return errUsage
	}
	fs := flag.NewFlagSet("config validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, help) }
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	var docs [][]byte
	for _, name := range fs.Args() {
		b, err := readLimited(name)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return err
		}
		docs = append(docs, b)
	}
	cfg, err := inferencecfg.ParseLayers(docs...)
	if err != nil {
		var ps inferencecfg.Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				fmt.Fprintln(stdout, p.String())
			}
		} else {
			fmt.Fprintln(stdout, err)
		}
		return err
	}
	fmt.Fprintf(stdout, "ok rev %s\n", cfg.Rev)
	return nil
}

// readLimited reads a file, refusing one larger than a config can be.
func readLimited(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, inferencecfg.MaxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	return b, nil // Parse reports an oversized document
}
