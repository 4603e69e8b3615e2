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
	sub nacosreg.Subscription
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

// Close stops the subscription. Idempotent.
func (w *Watched) Close() { w.sub.Stop() }
