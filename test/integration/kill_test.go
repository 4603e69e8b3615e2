//go:build integration

package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/balancer"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
)

// TestSIGKILL runs the example Go inference service as a real process, waits
// until a balancer routes to it, kills it with SIGKILL (no drain, no
// deregister) and measures how long until Nacos drops the instance and the
// balancer stops seeing it.
func TestSIGKILL(t *testing.T) {
	bin := buildBinary(t, "cmd/example-inference")
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		svc := "ai-kill-" + s.Kind
		port := freePort(t)
		args := []string{"-port", strconv.Itoa(port), "-service", svc, "-cycle", "300ms", "-min-ms", "5", "-max-ms", "10"}
		if s.Kind == "rnacos" {
			args = append(args, "-rnacos")
		}
		cmd := startProcess(t, bin, []string{"NACOS_ADDR=" + s.Addr, "LOG_LEVEL=warn"}, args...)
		bl := watchService(t, s, svc)
		toActive := eventually(t, "example service routable", 30*time.Second, func() bool { return routableFor(bl.Balancer, "example", port) })
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		gone := eventually(t, "killed instance dropped", 60*time.Second, func() bool { return len(bl.Endpoints()) == 0 })
		if _, _, err := bl.Pick(context.Background(), balancer.Request{}); err == nil {
			t.Fatal("a balancer still picks the killed instance")
		}
		t.Logf("%s: process start -> routable %v; SIGKILL -> instance gone from Nacos and the balancer %v",
			s.Kind, toActive.Round(time.Millisecond), gone.Round(time.Millisecond))
	})
}
