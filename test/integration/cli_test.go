//go:build integration

package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
)

// TestCLIInstancesAndPick runs the operator commands against real servers.
func TestCLIInstancesAndPick(t *testing.T) {
	bin := buildBinary(t, "cmd/nacos-ai-bridge")
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		svc := "ai-cli-" + s.Kind
		md := metadata.Instance{Lifecycle: metadata.Active, Warm: metadata.Ready, InferenceHealthy: metadata.True, GPUHealthy: metadata.True,
			GPUModel: "NVIDIA L4", GPUCount: metadata.IntOf(1), LoadedModels: []string{"qwen"}, ConfigRev: "abcd1234",
			UpdatedAt: metadata.IntOf(time.Now().Unix())}.Encode()
		if err := nacostest.Client(t, s).Register(nacosreg.Registration{Service: svc, IP: "127.0.0.1", Port: 19700, Enabled: true, Metadata: md}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		run := func(args ...string) (string, error) {
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "NACOS_ADDR="+s.Addr)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		out, err := run("instances", svc)
		if err != nil || !strings.Contains(out, "127.0.0.1:19700") || !strings.Contains(out, "ACTIVE") || !strings.Contains(out, "1x NVIDIA L4") || !strings.Contains(out, "abcd1234") {
			t.Fatalf("instances: %v\n%s", err, out)
		}
		t.Logf("%s: nacos-ai-bridge instances %s\n%s", s.Kind, svc, out)
		if out, err := run("pick", "-model", "qwen", svc); err != nil || strings.TrimSpace(out) != "127.0.0.1:19700" {
			t.Fatalf("pick: %v %q", err, out)
		}
		if out, err := run("pick", "-model", "llama", svc); err == nil || !strings.Contains(out, "no instance serves model llama") {
			t.Fatalf("pick of an unserved model: %v %q", err, out)
		}
	})
}
