// Command ai-demo walks the thin path through a real Nacos with readable
// output: an inference instance registers with metadata, a client subscribes
// and sees it, the instance turns warm, an operator publishes inference config
// and the instance receives it, and the instance leaves.
//
// It is what `make demo-thin` runs (scripts/demo-thin.sh starts a local Nacos when
// NACOS_ADDR is not set).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

const (
	service = "ai-demo"
	group   = "AI_SERVICE"
	dataID  = "ai-inference-config"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := os.Getenv("NACOS_ADDR")
	if addr == "" {
		return fmt.Errorf("NACOS_ADDR is not set (scripts/demo.sh sets it)")
	}
	level := zerolog.WarnLevel // quiet by default; LOG_LEVEL=debug shows the SDK's lines too
	if l, err := zerolog.ParseLevel(os.Getenv("LOG_LEVEL")); err == nil && l != zerolog.NoLevel {
		level = l
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(level).With().Timestamp().Logger()
	tmp, err := os.MkdirTemp("", "ai-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	client := func(name string) (*nacosreg.Client, error) {
		return nacosreg.New(nacosreg.Options{
			Servers: []string{addr}, Group: group, Logger: log, SDKLogLevel: level.String(),
			CacheDir: filepath.Join(tmp, name, "cache"), LogDir: filepath.Join(tmp, name, "log"),
		})
	}
	step := func(format string, a ...any) { fmt.Printf("  %s\n", fmt.Sprintf(format, a...)) }

	fmt.Printf("Nacos at %s\n", addr)
	a, err := client("instance")
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := client("caller")
	if err != nil {
		return err
	}
	defer b.Close()

	seen := make(chan []nacosreg.Instance, 16)
	sub, err := b.Subscribe(service, group, func(l []nacosreg.Instance) { seen <- l })
	if err != nil {
		return err
	}
	defer sub.Stop()
	waitFor := func(what string, start time.Time, ok func([]nacosreg.Instance) bool) error {
		for {
			select {
			case l := <-seen:
				if ok(l) {
					step("caller sees %s after %v: %s", what, time.Since(start).Round(time.Millisecond), describe(l))
					return nil
				}
			case <-time.After(15 * time.Second):
				return fmt.Errorf("caller did not see %s within 15s", what)
			}
		}
	}

	md := metadata.Instance{
		Lifecycle: metadata.Registered, Warm: metadata.Cold, InferenceHealthy: metadata.True, GPUHealthy: metadata.True,
		GPUModel: "NVIDIA H100 80GB HBM3", GPUCount: metadata.IntOf(1), GPUMemTotal: metadata.IntOf(81559),
		LoadedModels: []string{"qwen2.5-7b-instruct"}, UpdatedAt: metadata.IntOf(time.Now().Unix()),
	}
	reg := nacosreg.Registration{Service: service, IP: "127.0.0.1", Port: 18000, Enabled: true, Metadata: md.Encode()}
	fmt.Println("1. the instance registers, cold")
	start := time.Now()
	if err := a.Register(reg); err != nil {
		return err
	}
	if err := waitFor("the instance", start, func(l []nacosreg.Instance) bool { return len(l) == 1 }); err != nil {
		return err
	}

	fmt.Println("2. the instance warms up and becomes ACTIVE")
	md.Lifecycle, md.Warm, md.UpdatedAt = metadata.Active, metadata.Ready, metadata.IntOf(time.Now().Unix())
	reg.Metadata = md.Encode()
	start = time.Now()
	if err := a.Update(reg); err != nil {
		return err
	}
	if err := waitFor("warm.status=ready", start, func(l []nacosreg.Instance) bool {
		return len(l) == 1 && l[0].Metadata[metadata.KeyWarmStatus] == "ready"
	}); err != nil {
		return err
	}

	fmt.Printf("3. an operator publishes %s (group %s); the instance listens\n", dataID, group)
	cfg := make(chan nacosreg.ConfigEvent, 8)
	l, err := a.Listen(dataID, group, func(e nacosreg.ConfigEvent) { cfg <- e })
	if err != nil {
		return err
	}
	defer l.Stop()
	<-cfg // the current state comes first
	yaml := fmt.Sprintf("inference:\n  temperature: 0.7\n  max-tokens: 512\n# published %s\n", time.Now().Format(time.RFC3339Nano))
	start = time.Now()
	if err := b.PublishConfig(dataID, group, yaml, "yaml"); err != nil {
		return err
	}
	for {
		select {
		case e := <-cfg:
			if e.Content == yaml {
				step("instance received the config after %v (md5 %s):", time.Since(start).Round(time.Millisecond), e.MD5[:8])
				for _, line := range strings.Split(strings.TrimSpace(yaml), "\n") {
					step("  | %s", line)
				}
				goto leave
			}
		case <-time.After(15 * time.Second):
			return fmt.Errorf("config not received within 15s")
		}
	}
leave:
	fmt.Println("4. the instance deregisters")
	start = time.Now()
	if err := a.Deregister(reg); err != nil {
		return err
	}
	if err := waitFor("an empty list", start, func(l []nacosreg.Instance) bool { return len(l) == 0 }); err != nil {
		return err
	}
	_ = b.DeleteConfig(dataID, group)
	fmt.Println("done.")
	return nil
}

func describe(l []nacosreg.Instance) string {
	if len(l) == 0 {
		return "no instances"
	}
	var parts []string
	for _, in := range l {
		md, _ := metadata.Decode(in.Metadata)
		parts = append(parts, fmt.Sprintf("%s:%d lifecycle=%s warm=%s gpu=%q models=%v",
			in.IP, in.Port, md.Lifecycle, md.Warm, md.GPUModel, md.LoadedModels))
	}
	return strings.Join(parts, "; ")
}
