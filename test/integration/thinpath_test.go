//go:build integration

package integration

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
)

// TestThinPath is the foundation's end-to-end path: register, subscribe,
// metadata change, config push, deregister — against every real server.
func TestThinPath(t *testing.T) {
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		a := nacostest.Client(t, s)
		b := nacostest.Client(t, s)
		const svc, group = "ai-demo", "AI_SERVICE"
		reg := nacosreg.Registration{
			Service: svc, IP: "127.0.0.1", Port: 19001, Enabled: true,
			Metadata: map[string]string{"gpu.model": "NVIDIA H100 80GB HBM3", "gpu.memory.total": "81559", "warm.status": "cold"},
		}

		w := newWatcher()
		sub, err := b.Subscribe(svc, group, w.push)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Stop()

		start := time.Now()
		if err := a.Register(reg); err != nil {
			t.Fatal(err)
		}
		dReg := w.waitFor(t, "registered instance", start, 10*time.Second, func(l []nacosreg.Instance) bool {
			i := find(l, reg.IP, reg.Port)
			return i != nil && i.Metadata["warm.status"] == "cold" && i.Metadata["gpu.model"] == "NVIDIA H100 80GB HBM3"
		})

		reg.Metadata["warm.status"] = "ready"
		start = time.Now()
		if err := a.Update(reg); err != nil {
			t.Fatal(err)
		}
		dUpd := w.waitFor(t, "warm.status=ready", start, 10*time.Second, func(l []nacosreg.Instance) bool {
			i := find(l, reg.IP, reg.Port)
			return i != nil && i.Metadata["warm.status"] == "ready"
		})

		// Config: A listens, the test publishes through the HTTP open API.
		const dataID = "ai-inference-config"
		events := make(chan nacosreg.ConfigEvent, 16)
		l, err := a.Listen(dataID, group, func(e nacosreg.ConfigEvent) { events <- e })
		if err != nil {
			t.Fatal(err)
		}
		defer l.Stop()
		first := <-events // current state, delivered first
		yaml := "inference:\n  temperature: 0.5\n  max-tokens: 256\n"
		if !first.Deleted && first.Content == yaml {
			yaml += "# " + time.Now().String() + "\n"
		}
		start = time.Now()
		if err := nacostest.PublishConfig(s, dataID, group, yaml, "yaml"); err != nil {
			t.Fatal(err)
		}
		var dCfg time.Duration
		for dCfg == 0 {
			select {
			case e := <-events:
				if e.Content == yaml {
					dCfg = time.Since(start)
					if e.MD5 != nacosreg.MD5(yaml) {
						t.Fatalf("md5 %s, want %s", e.MD5, nacosreg.MD5(yaml))
					}
				}
			case <-time.After(10 * time.Second):
				t.Fatal("config change not delivered within 10s")
			}
		}
		got, err := a.GetConfig(dataID, group)
		if err != nil || got != yaml {
			t.Fatalf("GetConfig = %q, %v; want the published YAML", got, err)
		}

		start = time.Now()
		if err := nacostest.DeleteConfig(s, dataID, group); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-events:
			if !e.Deleted {
				t.Fatalf("after delete got %+v, want Deleted", e)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("config deletion not delivered within 10s")
		}
		dDel := time.Since(start)
		if _, err := a.GetConfig(dataID, group); !errors.Is(err, nacosreg.ErrConfigNotFound) {
			t.Fatalf("GetConfig after delete: %v, want ErrConfigNotFound", err)
		}

		start = time.Now()
		if err := a.Deregister(reg); err != nil {
			t.Fatal(err)
		}
		dDereg := w.waitFor(t, "empty list after deregister", start, 10*time.Second, func(l []nacosreg.Instance) bool {
			return find(l, reg.IP, reg.Port) == nil && len(l) == 0
		})

		t.Logf("%s push latency: register %v, metadata update %v, config publish %v, config delete %v, deregister %v (pushes seen by B: %d)",
			s.Kind, dReg.Round(time.Millisecond), dUpd.Round(time.Millisecond), dCfg.Round(time.Millisecond),
			dDel.Round(time.Millisecond), dDereg.Round(time.Millisecond), w.pushes())
	})

	for _, d := range []string{"log", "cache"} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s/ was written into the working directory", d)
		}
	}
}
