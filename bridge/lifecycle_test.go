package bridge

import (
	"errors"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
)

func TestLifecycleTransitions(t *testing.T) {
	now := time.Unix(1764566400, 0)
	type step struct {
		kind string // "lc" or "warm"
		to   string
		ok   bool // legal
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"happy path", []step{{"warm", "warming", true}, {"warm", "ready", true}, {"lc", "ACTIVE", true}, {"lc", "DRAINING", true}, {"lc", "STOPPED", true}}},
		{"no ACTIVE while cold", []step{{"lc", "ACTIVE", false}}},
		{"no ACTIVE while warming", []step{{"warm", "warming", true}, {"lc", "ACTIVE", false}}},
		{"cold skips warming: illegal", []step{{"warm", "ready", false}}},
		{"failed warm-up back to cold, retry", []step{{"warm", "warming", true}, {"warm", "cold", true}, {"warm", "warming", true}, {"warm", "ready", true}}},
		{"backend restart: ready -> cold, ACTIVE -> REGISTERED", []step{{"warm", "warming", true}, {"warm", "ready", true}, {"lc", "ACTIVE", true}, {"warm", "cold", true}, {"lc", "REGISTERED", true}}},
		{"drain is never cancelled", []step{{"warm", "warming", true}, {"warm", "ready", true}, {"lc", "ACTIVE", true}, {"lc", "DRAINING", true}, {"lc", "ACTIVE", false}}},
		{"no warm-up while draining", []step{{"lc", "DRAINING", true}, {"warm", "warming", false}}},
		{"STOPPED is final", []step{{"lc", "STOPPED", true}, {"lc", "REGISTERED", false}, {"lc", "DRAINING", false}}},
		{"DRAINING cannot skip to REGISTERED", []step{{"lc", "DRAINING", true}, {"lc", "REGISTERED", false}}},
		{"ready cannot go back to warming", []step{{"warm", "warming", true}, {"warm", "ready", true}, {"warm", "warming", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMachine("10.0.0.1:8000", "chat", 0)
			legal := 0
			for i, s := range tt.steps {
				var err error
				var changed bool
				beforeLC, beforeWarm := m.Lifecycle(), m.Warm()
				if s.kind == "lc" {
					_, changed, err = m.SetLifecycle(metadata.Lifecycle(s.to), "test", now)
				} else {
					_, changed, err = m.SetWarm(metadata.WarmStatus(s.to), "test", now)
				}
				if s.ok != (err == nil) {
					t.Fatalf("step %d %s->%s: err %v, want legal=%v", i, s.kind, s.to, err, s.ok)
				}
				if err != nil {
					if !errors.Is(err, ErrIllegalTransition) || m.Lifecycle() != beforeLC || m.Warm() != beforeWarm {
						t.Fatalf("illegal transition changed state or wrong error: %v", err)
					}
					continue
				}
				if !changed {
					t.Fatalf("step %d not recorded as a change", i)
				}
				legal++
			}
			if ev := m.Events(); len(ev) != legal {
				t.Fatalf("%d events for %d transitions", len(ev), legal)
			}
		})
	}
}

func TestEventsAreRecordedAndBounded(t *testing.T) {
	now := time.Unix(1764566400, 0)
	m := NewMachine("i", "s", 4)
	if _, changed, err := m.SetWarm(metadata.Cold, "same", now); changed || err != nil {
		t.Fatal("a transition to the current state must be a no-op")
	}
	for i := 0; i < 5; i++ {
		m.SetWarm(metadata.Warming, "try", now.Add(time.Duration(i)*time.Second))
		m.SetWarm(metadata.Cold, "fail", now.Add(time.Duration(i)*time.Second))
	}
	ev := m.Events()
	if len(ev) != 4 || ev[3].To != "cold" || ev[3].At != now.Add(4*time.Second) || ev[0].At != now.Add(3*time.Second) {
		t.Fatalf("ring: %+v", ev)
	}
	e := ev[3]
	if e.Instance != "i" || e.Service != "s" || e.Kind != "warm" || e.From != "warming" || e.Reason != "fail" {
		t.Fatalf("event %+v", e)
	}
	if m.Routable() {
		t.Fatal("cold instance routable")
	}
}
