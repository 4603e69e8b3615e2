//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/balancer"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
)

// TestBalancerFollowsNacos: three registered instances change lifecycle,
// warm status and health; a balancer fed by a real subscription stops picking
// each within 1.5 s of the change reaching Nacos and resumes after recovery.
func TestBalancerFollowsNacos(t *testing.T) {
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		svc := "ai-balance-" + s.Kind
		// One client per instance, as in a deployment: Java Nacos 2.x keeps
		// one instance per service per connection.
		owners := []*nacosreg.Client{nacostest.Client(t, s), nacostest.Client(t, s), nacostest.Client(t, s)}
		c := nacostest.Client(t, s)
		// Round robin makes every sample of picks cover every routable
		// instance; the filters under test apply to every policy alike.
		bl, err := balancer.FromNacos(c, svc, "", balancer.Options{SlowStart: -1, Policy: balancer.PolicyRoundRobin})
		if err != nil {
			t.Fatal(err)
		}
		defer bl.Close()

		md := func(mod func(*metadata.Instance)) map[string]string {
			in := metadata.Instance{Lifecycle: metadata.Active, Warm: metadata.Ready, InferenceHealthy: metadata.True,
				GPUHealthy: metadata.True, LoadedModels: []string{"qwen"}, UpdatedAt: metadata.IntOf(time.Now().Unix())}
			if mod != nil {
				mod(&in)
			}
			return in.Encode()
		}
		regs := make([]nacosreg.Registration, 3)
		for i := range regs {
			regs[i] = nacosreg.Registration{Service: svc, IP: "127.0.0.1", Port: 19400 + i, Enabled: true, Metadata: md(nil)}
			if err := owners[i].Register(regs[i]); err != nil {
				t.Fatal(err)
			}
		}
		// pickedSet samples picks and returns the ports seen.
		pickedSet := func() map[int]bool {
			got := map[int]bool{}
			for i := 0; i < 60; i++ {
				e, done, err := bl.Pick(context.Background(), balancer.Request{Model: "qwen"})
				if err != nil {
					continue
				}
				got[e.Port] = true
				done.Report(balancer.Result{Latency: time.Millisecond})
			}
			return got
		}
		waitFor := func(what string, start time.Time, ok func(map[int]bool) bool) time.Duration {
			t.Helper()
			for time.Since(start) < 10*time.Second {
				if ok(pickedSet()) {
					return time.Since(start)
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Fatalf("%s: not within 10s", what)
			return 0
		}
		waitFor("all three routable", time.Now(), func(m map[int]bool) bool { return len(m) == 3 })

		changes := []struct {
			name string
			mod  func(*metadata.Instance)
		}{
			{"lifecycle DRAINING", func(m *metadata.Instance) { m.Lifecycle = metadata.Draining }},
			{"warm.status cold", func(m *metadata.Instance) { m.Warm = metadata.Cold }},
			{"inference.healthy false", func(m *metadata.Instance) { m.InferenceHealthy = metadata.False }},
		}
		var report []string
		for i, ch := range changes {
			r := regs[i]
			r.Metadata = md(ch.mod)
			start := time.Now()
			if err := owners[i].Update(r); err != nil {
				t.Fatal(err)
			}
			stop := waitFor(ch.name+": stop picking", start, func(m map[int]bool) bool { return !m[r.Port] && len(m) > 0 })
			r.Metadata = md(nil)
			start = time.Now()
			if err := owners[i].Update(r); err != nil {
				t.Fatal(err)
			}
			resume := waitFor(ch.name+": resume", start, func(m map[int]bool) bool { return m[r.Port] })
			if stop > 1500*time.Millisecond {
				t.Errorf("%s: balancer kept picking for %v after the write (goal 1.5 s)", ch.name, stop)
			}
			report = append(report, fmt.Sprintf("%s: stopped after %v, resumed after %v", ch.name, stop.Round(time.Millisecond), resume.Round(time.Millisecond)))
		}
		t.Logf("%s: %s", s.Kind, strings.Join(report, "; "))
	})
}

// TestTransportRetriesConnectionFailure: the RoundTripper resolves
// http://<service>/ through a real subscription; a dead endpoint's
// connection failure is retried on a live one within the budget.
func TestTransportRetriesConnectionFailure(t *testing.T) {
	nacostest.ForEach(t, func(t *testing.T, s nacostest.Server) {
		svc := "ai-transport-" + s.Kind
		live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok "+r.URL.Path) }))
		defer live.Close()
		dead, _ := net.Listen("tcp", "127.0.0.1:0")
		deadPort := dead.Addr().(*net.TCPAddr).Port
		dead.Close() // nothing listens there any more

		c := nacostest.Client(t, s)
		livePort, _ := strconv.Atoi(live.URL[strings.LastIndex(live.URL, ":")+1:])
		ready := metadata.Instance{Lifecycle: metadata.Active, Warm: metadata.Ready, InferenceHealthy: metadata.True,
			GPUHealthy: metadata.True, UpdatedAt: metadata.IntOf(time.Now().Unix())}.Encode()
		for _, p := range []int{livePort, deadPort} {
			if err := nacostest.Client(t, s).Register(nacosreg.Registration{Service: svc, IP: "127.0.0.1", Port: p, Enabled: true, Metadata: ready}); err != nil {
				t.Fatal(err)
			}
		}
		bl, err := balancer.FromNacos(c, svc, "", balancer.Options{SlowStart: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer bl.Close()
		for deadline := time.Now().Add(10 * time.Second); len(bl.Endpoints()) < 2; {
			if time.Now().After(deadline) {
				t.Fatal("balancer did not see both instances")
			}
			time.Sleep(20 * time.Millisecond)
		}
		hc := &http.Client{Transport: &balancer.Transport{Balancers: map[string]*balancer.Balancer{svc: bl.Balancer},
			Budget: &balancer.RetryBudget{}}}
		for i := 0; i < 30; i++ {
			resp, err := hc.Get("http://" + svc + "/v1/models")
			if err != nil {
				t.Fatalf("request %d failed although one endpoint is alive: %v", i, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "ok /v1/models" {
				t.Fatalf("body %q", b)
			}
		}
		// No endpoint at all: a clear error, not a hang.
		_, err = (&http.Client{Transport: &balancer.Transport{Balancers: map[string]*balancer.Balancer{}}}).Get("http://nope/")
		if err == nil {
			t.Fatal("unknown service accepted")
		}
		var ne *balancer.NoEndpointError
		_ = errors.As(err, &ne)
	})
}
