package inferencecfg

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStoreLifecycle(t *testing.T) {
	var logs strings.Builder
	s := NewStore(zerolog.New(&logs), nil)
	if c := s.Current(); c.Rev != DefaultConfig().Rev || s.Status().State != StateDefaults {
		t.Fatalf("start: %+v %+v", c, s.Status())
	}
	var swaps [][2]string
	cancel := s.Subscribe(func(old, new *Config) { swaps = append(swaps, [2]string{old.Rev, new.Rev}) })
	defer cancel()

	applied, err := s.Apply("test", []byte(example))
	if err != nil || !applied {
		t.Fatalf("apply: %v %v", applied, err)
	}
	good := s.Current()
	if good.For("qwen2.5-7b-instruct").MaxTokens != 2048 || s.Status().State != StateApplied {
		t.Fatalf("%+v", s.Status())
	}
	// Same meaning again: no-op.
	if applied, err := s.Apply("test", []byte(example+"\n# a comment\n")); applied || err != nil {
		t.Fatalf("identical revision applied again: %v %v", applied, err)
	}
	// A bad edit: rejected, the last good keeps serving.
	if applied, err := s.Apply("test", []byte("inference:\n  temperature: 7\n")); applied || err == nil {
		t.Fatal("bad config applied")
	}
	if s.Current() != good {
		t.Fatal("current config changed after a rejection")
	}
	st := s.Status()
	if st.Rejections != 1 || st.LastRejection == nil || !strings.Contains(st.LastRejection.Reason, "7 is above the maximum 2") {
		t.Fatalf("status %+v", st)
	}
	// Deleted: last good kept, and said so.
	s.Deleted("test")
	if s.Current() != good || s.Status().State != StateKeptAfterDelete {
		t.Fatalf("after delete %+v", s.Status())
	}
	// Re-publishing the same content after a delete re-applies it (state changes).
	if applied, _ := s.Apply("test", []byte(example)); !applied || s.Status().State != StateApplied {
		t.Fatal("re-publish after delete not applied")
	}
	if len(swaps) != 2 || swaps[0][0] != DefaultConfig().Rev || swaps[0][1] != good.Rev {
		t.Fatalf("swaps %v", swaps)
	}
	for _, want := range []string{`"message":"inference config applied"`, `"message":"inference config rejected; last good config keeps serving"`, `"message":"inference config deleted in Nacos; last good config keeps serving"`} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

func TestLayers(t *testing.T) {
	fleet := []byte("inference:\n  max-tokens-limit: 8192\n  temperature: 0.5\n  models:\n    a:\n      max-tokens: 1024\n")
	svc := []byte("inference:\n  temperature: 0.2\n  models:\n    a:\n      top-p: 0.5\n")
	c, err := ParseLayers(fleet, svc)
	if err != nil {
		t.Fatal(err)
	}
	if c.Defaults.Temperature != 0.2 || c.For("a").MaxTokens != 1024 || c.For("a").TopP != 0.5 || c.MaxTokensLimit != 8192 {
		t.Fatalf("%+v %+v", c.Defaults, c.For("a"))
	}
	// A service layer valid alone but breaking the fleet's limit is rejected.
	if _, err := ParseLayers(fleet, []byte("inference:\n  max-tokens: 9000\n")); err == nil || !strings.Contains(err.Error(), "above max-tokens-limit 8192") {
		t.Fatalf("err %v", err)
	}
	// Empty layers are skipped.
	if c2, err := ParseLayers(nil, fleet, nil); err != nil || c2.Defaults.Temperature != 0.5 {
		t.Fatalf("%v", err)
	}
}

// fakeListener is a fake of our Listener interface: it records fn per data
// ID and lets the test deliver events.
type fakeListener struct {
	mu  sync.Mutex
	fns map[string]func(nacosreg.ConfigEvent)
}

type stopFunc func()

func (f stopFunc) Stop() { f() }

func (f *fakeListener) Listen(id, group string, fn func(nacosreg.ConfigEvent)) (nacosreg.Listener, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fns[id] = fn
	return stopFunc(func() {}), nil
}

func (f *fakeListener) send(id string, content string) {
	f.mu.Lock()
	fn := f.fns[id]
	f.mu.Unlock()
	if content == "" {
		fn(nacosreg.ConfigEvent{DataID: id, Deleted: true})
		return
	}
	fn(nacosreg.ConfigEvent{DataID: id, Content: content, MD5: nacosreg.MD5(content)})
}

func TestWatchWaitsForEveryLayer(t *testing.T) {
	f := &fakeListener{fns: map[string]func(nacosreg.ConfigEvent){}}
	s := NewStore(zerolog.Nop(), nil)
	done := make(chan *Watcher)
	go func() {
		w, err := Watch(f, Source{Service: "chat"}, s, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- w
	}()
	for {
		f.mu.Lock()
		n := len(f.fns)
		f.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	f.send("ai-inference-config", "inference:\n  temperature: 0.5\n")
	if s.Status().Applies != 0 {
		t.Fatal("applied before the service layer's first state arrived")
	}
	f.send("chat.ai-inference-config", "") // service layer absent
	w := <-done
	defer w.Stop()
	if s.Current().Defaults.Temperature != 0.5 {
		t.Fatalf("%+v", s.Current().Defaults)
	}
	f.send("chat.ai-inference-config", "inference:\n  temperature: 0.1\n")
	if s.Current().Defaults.Temperature != 0.1 || !strings.Contains(s.Status().Source, "chat.ai-inference-config") {
		t.Fatalf("%+v", s.Status())
	}
	f.send("ai-inference-config", "")
	f.send("chat.ai-inference-config", "")
	if s.Status().State != StateKeptAfterDelete || s.Current().Defaults.Temperature != 0.1 {
		t.Fatalf("%+v", s.Status())
	}
}

func TestCurrentUnderConcurrentApply(t *testing.T) {
	s := NewStore(zerolog.Nop(), nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := s.Current()
				if c.Defaults.MaxTokens < 1 {
					t.Error("torn config")
					return
				}
			}
		}()
	}
	for i := 1; i <= 50; i++ {
		s.Apply("t", []byte("inference:\n  max-tokens: "+strconv.Itoa(i)+"\n"))
	}
	close(stop)
	wg.Wait()
	if s.Current().Defaults.MaxTokens != 50 {
		t.Fatalf("last apply not current: %d", s.Current().Defaults.MaxTokens)
	}
}

func BenchmarkCurrent(b *testing.B) {
	s := NewStore(zerolog.Nop(), nil)
	s.Apply("b", []byte(example))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var sink int
		for pb.Next() {
			sink += s.Current().Defaults.MaxTokens
		}
		_ = sink
	})
}

// BenchmarkCurrentMutex is the baseline: the same read behind a RWMutex.
func BenchmarkCurrentMutex(b *testing.B) {
	var mu sync.RWMutex
	c, _ := Parse([]byte(example))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var sink int
		for pb.Next() {
			mu.RLock()
			sink += c.Defaults.MaxTokens
			mu.RUnlock()
		}
		_ = sink
	})
}
