package nacosreg

import (
	"fmt"
	"sync"

	"github.com/nacos-group/nacos-sdk-go/v2/model"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
)

// subscription hands instance lists from the SDK's gRPC receive goroutine to
// a goroutine of its own: the SDK callback stores the latest list and does a
// non-blocking send on a 1-slot channel, so it never blocks, and a slow user
// function only ever sees the newest list (intermediate ones are skipped).
type subscription struct {
	c       *Client
	service string
	param   *vo.SubscribeParam // the SDK identifies the callback by this pointer

	// guarded by mu
	mu     sync.Mutex
	latest []model.Instance
	have   bool

	wake     chan struct{}
	done     chan struct{}
	finished chan struct{}
	stopOnce sync.Once
}

// Subscribe calls fn with the full instance list of the service now and after
// every change Nacos pushes (an empty list included). fn runs on a goroutine
// owned by the returned Subscription, never concurrently with itself; it must
// not modify what it is given.
func (c *Client) Subscribe(service, group string, fn func([]Instance)) (Subscription, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	s := &subscription{
		c: c, service: service,
		wake: make(chan struct{}, 1), done: make(chan struct{}), finished: make(chan struct{}),
	}
	s.param = &vo.SubscribeParam{ServiceName: service, GroupName: c.group(group), SubscribeCallback: s.onPush}
	c.subs[s] = struct{}{}
	c.mu.Unlock()

	go s.loop(fn)
	if err := c.naming.Subscribe(s.param); err != nil {
		s.Stop()
		return nil, fmt.Errorf("nacosreg: subscribe %s@%s: %w", service, s.param.GroupName, err)
	}
	return s, nil
}

// onPush runs on the SDK's goroutine: copy, store and signal, nothing else.
// The copy is needed: the SDK later sorts the slice it handed over in place
// (when comparing it with the next push), which would race with our reader.
func (s *subscription) onPush(list []model.Instance, err error) {
	if err != nil {
		return // the SDK passes nil here today; a failed push keeps the last list
	}
	own := append([]model.Instance(nil), list...)
	s.mu.Lock()
	s.latest, s.have = own, true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscription) loop(fn func([]Instance)) {
	defer close(s.finished)
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		list, have := s.latest, s.have
		s.mu.Unlock()
		if !have {
			continue
		}
		fn(convert(s.service, list))
	}
}

// Stop unsubscribes and waits for the delivery goroutine. Idempotent.
func (s *subscription) Stop() {
	s.stopOnce.Do(func() {
		if err := s.c.naming.Unsubscribe(s.param); err != nil {
			s.c.log.Warn().Err(err).Str("service", s.service).Msg("unsubscribe failed")
		}
		close(s.done)
		<-s.finished
		s.c.mu.Lock()
		delete(s.c.subs, s)
		s.c.mu.Unlock()
	})
}
