package nacosreg

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/model"
)

// TestSubscriptionHandOff drives the SDK-facing callback from many
// goroutines (as the SDK's receive goroutines do) against the delivery loop:
// the callback never blocks, the user function is never called concurrently
// with itself, and the last list pushed is the last one delivered.
func TestSubscriptionHandOff(t *testing.T) {
	s := &subscription{service: "svc", wake: make(chan struct{}, 1), done: make(chan struct{}), finished: make(chan struct{})}
	var mu sync.Mutex
	var running, maxRunning int
	var last []Instance
	slow := make(chan struct{})
	go s.loop(func(l []Instance) {
		mu.Lock()
		running++
		maxRunning = max(maxRunning, running)
		mu.Unlock()
		<-slow // a slow user function must not stall the pushes
		mu.Lock()
		running--
		last = l
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				list := []model.Instance{{Ip: "10.0.0." + strconv.Itoa(g), Port: uint64(i), Metadata: map[string]string{"k": "v"}}}
				s.onPush(list, nil)
				list[0].Port = 9999 // the SDK reuses its slice; we copied
			}
		}(g)
	}
	wg.Wait() // every push returned while the user function was blocked
	s.onPush([]model.Instance{{Ip: "last", Port: 1}}, nil)
	close(slow)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		ok := len(last) == 1 && last[0].IP == "last"
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last push not delivered: %+v", last)
		}
		time.Sleep(time.Millisecond)
	}
	close(s.done)
	<-s.finished
	if maxRunning != 1 {
		t.Fatalf("user function ran %d at once", maxRunning)
	}
	if last[0].Port == 9999 {
		t.Fatal("delivered list aliases the SDK's slice")
	}
}
