//go:build integration

package integration

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
)

func cfgDoc(maxTokens int) string {
	return fmt.Sprintf("inference:\n  temperature: 0.6\n  max-tokens: %d\n  models:\n    qwen2.5-7b-instruct:\n      max-tokens: 2048\n", maxTokens)
}

// TestInferenceConfig publishes through the HTTP open API, as the console
// does, and checks what the bridge's store applies.
func TestInferenceConfig(t *testing.T) {
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		dataID, group := "ai-inference-config", "AI_SERVICE"
		svc := "cfgtest-" + s.Kind
		src := inferencecfg.Source{DataID: dataID, Group: group, Service: svc}
		_ = nacostest.DeleteConfig(s, dataID, group)
		_ = nacostest.DeleteConfig(s, svc+"."+dataID, group)

		c := nacostest.Client(t, s)
		store := inferencecfg.NewStore(zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), nil)
		applied := make(chan *inferencecfg.Config, 64)
		var seqMu sync.Mutex
		var seq []int // max-tokens of every applied config, in apply order
		store.Subscribe(func(_, n *inferencecfg.Config) {
			seqMu.Lock()
			seq = append(seq, n.Defaults.MaxTokens)
			seqMu.Unlock()
			select {
			case applied <- n:
			default:
			}
		})
		w, err := inferencecfg.Watch(c, src, store, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if st := store.Status(); st.State != inferencecfg.StateDefaults {
			t.Fatalf("no config in Nacos: want defaults, got %+v", st)
		}

		waitMax := func(want int) time.Duration {
			t.Helper()
			start := time.Now()
			deadline := time.After(10 * time.Second)
			for store.Current().Defaults.MaxTokens != want {
				select {
				case <-applied:
				case <-deadline:
					t.Fatalf("max-tokens %d not applied within 10s (current %d, status %+v)", want, store.Current().Defaults.MaxTokens, store.Status())
				}
			}
			return time.Since(start)
		}

		// Publish -> applied latency over 50 publishes.
		var lat []time.Duration
		for i := 1; i <= 50; i++ {
			start := time.Now()
			if err := nacostest.PublishConfig(s, dataID, group, cfgDoc(100+i), "yaml"); err != nil {
				t.Fatal(err)
			}
			waitMax(100 + i)
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		good := store.Current()
		if good.For("qwen2.5-7b-instruct").MaxTokens != 2048 {
			t.Fatalf("model override lost: %+v", good.For("qwen2.5-7b-instruct"))
		}

		// Every kind of bad input is rejected; the last good config keeps serving.
		bad := []struct{ name, doc, reason string }{
			{"out of range", "inference:\n  temperature: 3\n", "3 is above the maximum 2"},
			{"unknown key", "inference:\n  max_tokens: 10\n", "did you mean max-tokens?"},
			{"wrong type", "inference:\n  batch-size: lots\n", `"lots" is not an integer`},
			{"duplicate key", "inference:\n  top-p: 0.5\n  top-p: 0.6\n", "duplicate key"},
			{"not YAML", "inference: [oops\n", "not valid YAML"},
			{"model below minimum", "inference:\n  models:\n    m:\n      max-tokens: 0\n", "inference.models.m.max-tokens: 0 is below the minimum 1"},
			{"oversized", "inference:\n  temperature: 1\n#" + strings.Repeat("x", 70<<10) + "\n", "over the 65536-byte limit"},
		}
		for _, b := range bad {
			before := store.Status().Rejections
			if err := nacostest.PublishConfig(s, dataID, group, b.doc, "yaml"); err != nil {
				t.Logf("%s: server refused %q itself: %v", s.Kind, b.name, err)
				continue
			}
			deadline := time.Now().Add(10 * time.Second)
			for store.Status().Rejections == before && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			st := store.Status()
			if st.Rejections == before {
				t.Fatalf("%s: not rejected within 10s", b.name)
			}
			if !strings.Contains(st.LastRejection.Reason, b.reason) {
				t.Fatalf("%s: reason %q, want %q", b.name, st.LastRejection.Reason, b.reason)
			}
			if store.Current() != good {
				t.Fatalf("%s: current config changed after a rejection", b.name)
			}
		}

		// The service layer overrides the fleet-wide config.
		if err := nacostest.PublishConfig(s, dataID, group, cfgDoc(300), "yaml"); err != nil {
			t.Fatal(err)
		}
		waitMax(300)
		if err := nacostest.PublishConfig(s, svc+"."+dataID, group, "inference:\n  max-tokens: 777\n", "yaml"); err != nil {
			t.Fatal(err)
		}
		waitMax(777)
		if store.Current().Defaults.Temperature != 0.6 {
			t.Fatal("fleet-wide values lost under the service layer")
		}
		if err := nacostest.DeleteConfig(s, svc+"."+dataID, group); err != nil {
			t.Fatal(err)
		}
		waitMax(300)

		// A burst of 20 publishes within a second ends with the last applied.
		seqMu.Lock()
		burstStart := len(seq)
		seqMu.Unlock()
		for i := 1; i <= 20; i++ {
			if err := nacostest.PublishConfig(s, dataID, group, cfgDoc(1000+i), "yaml"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(40 * time.Millisecond)
		}
		waitMax(1020)
		time.Sleep(2 * time.Second) // nothing older may arrive later
		if got := store.Current().Defaults.MaxTokens; got != 1020 {
			t.Fatalf("after the burst max-tokens=%d, want 1020 (stale revision active)", got)
		}
		seqMu.Lock()
		burst := append([]int(nil), seq[burstStart:]...)
		seqMu.Unlock()
		if !slices.IsSorted(burst) || burst[len(burst)-1] != 1020 {
			t.Fatalf("burst applied out of order: %v", burst)
		}

		// Restart: a new client and store pick up the current config.
		c2 := nacostest.Client(t, s)
		store2 := inferencecfg.NewStore(zerolog.Nop(), nil)
		w2, err := inferencecfg.Watch(c2, src, store2, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Stop()
		if store2.Current().Rev != store.Current().Rev || store2.Status().State != inferencecfg.StateApplied {
			t.Fatalf("restarted bridge has rev %s (%s), want %s", store2.Current().Rev, store2.Status().State, store.Current().Rev)
		}

		// Delete keeps the last good.
		last := store.Current()
		if err := nacostest.DeleteConfig(s, dataID, group); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for store.Status().State != inferencecfg.StateKeptAfterDelete && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if store.Status().State != inferencecfg.StateKeptAfterDelete || store.Current() != last {
			t.Fatalf("after delete: %+v", store.Status())
		}

		t.Logf("%s: publish (HTTP open API) -> applied: p50 %v, p99 %v, max %v over %d publishes; burst of 20 in %v applied in order %v",
			s.Kind, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond),
			len(lat), 20*40*time.Millisecond, burst)
	})
}
