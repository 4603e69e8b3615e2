package balancer

import (
	"fmt"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

// Subscriber is what FromNacos needs (nacosreg.Client satisfies it).
type Subscriber interface {
	Subscribe(service, group string, fn func([]nacosreg.Instance)) (nacosreg.Subscription, error)
}

// Watched is a Balancer fed by a Nacos subscription; Close stops it.
type Watched struct {
	*Balancer
	sub    nacosreg.Subscription
	client *nacosreg.Client // owned when built by Connect
}

// Connect is the one-line way in: it connects to Nacos with the same
// options the bridge uses and returns a balancer for service. Close closes
// the connection too.
//
//	b, err := balancer.Connect(nacosreg.Options{Servers: []string{"127.0.0.1:8848"}}, "chat", "AI_SERVICE", balancer.Options{})
func Connect(n nacosreg.Options, service, group string, opts Options) (*Watched, error) {
	c, err := nacosreg.New(n)
	if err != nil {
		return nil, fmt.Errorf("balancer: %w", err)
	}
	w, err := FromNacos(c, service, group, opts)
	if err != nil {
		c.Close()
		return nil, err
	}
	w.client = c
	return w, nil
}

// FromNacos builds a Balancer for service fed by a Nacos subscription: every
// push rebuilds the snapshot on the subscription's goroutine. The first list
// usually arrives within milliseconds; until then Pick returns ErrNoEndpoint.
func FromNacos(n Subscriber, service, group string, opts Options) (*Watched, error) {
	if opts.Service == "" {
		opts.Service = service
	}
	b := New(opts)
	sub, err := n.Subscribe(service, group, b.Update)
	if err != nil {
		return nil, fmt.Errorf("balancer: %w", err)
	}
	return &Watched{Balancer: b, sub: sub}, nil
}

// Close stops the subscription, and closes the Nacos connection when
// Connect made it. Idempotent.
func (w *Watched) Close() {
	w.sub.Stop()
	if w.client != nil {
		w.client.Close()
	}
}
