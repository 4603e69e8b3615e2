package inferencecfg

import (
	"fmt"
	"sync"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

// Defaults for where the config lives.
const (
	DefaultDataID = "ai-inference-config"
	DefaultGroup  = "AI_SERVICE"
)

// Listener is what Watch needs of Nacos (nacosreg.Client satisfies it).
type Listener interface {
	Listen(dataID, group string, fn func(nacosreg.ConfigEvent)) (nacosreg.Listener, error)
}

// Source says where the configs are.
type Source struct {
	// DataID and Group of the fleet-wide config (defaults
	// ai-inference-config, AI_SERVICE).
	DataID string
	Group  string
	// Service, when set, adds "<service>.<DataID>" in the same group,
	// layered over the fleet-wide one.
	Service string
}

func (s Source) withDefaults() Source {
	if s.DataID == "" {
		s.DataID = DefaultDataID
	}
	if s.Group == "" {
		s.Group = DefaultGroup
	}
	return s
}

// DataIDs returns the data IDs in layer order.
func (s Source) DataIDs() []string {
	s = s.withDefaults()
	if s.Service == "" {
		return []string{s.DataID}
	}
	return []string{s.DataID, s.Service + "." + s.DataID}
}

// Watcher keeps a Store in step with the configs in Nacos.
type Watcher struct {
	store *Store
	src   Source

	mu        sync.Mutex // serialises deliveries from the layers' listeners
	contents  []string   // latest content per layer ("" = absent)
	delivered []bool
	ready     chan struct{}
	readyOnce sync.Once
	listeners []nacosreg.Listener
	stopOnce  sync.Once
}

// Watch listens to the source's data IDs and applies every change to store.
// nacosreg delivers each config's current state first, so the first apply
// happens before any change and none is missed; identical revisions are
// no-ops, so nothing is applied twice. Watch waits up to wait for the first
// state of every layer (the bridge starts with the config in force); past
// that the built-in defaults serve until Nacos answers.
func Watch(l Listener, src Source, store *Store, wait time.Duration) (*Watcher, error) {
	src = src.withDefaults()
	ids := src.DataIDs()
	w := &Watcher{store: store, src: src, contents: make([]string, len(ids)), delivered: make([]bool, len(ids)), ready: make(chan struct{})}
	for i, id := range ids {
		i, id := i, id
		lis, err := l.Listen(id, src.Group, func(e nacosreg.ConfigEvent) { w.deliver(i, e) })
		if err != nil {
			w.Stop()
			return nil, fmt.Errorf("inferencecfg: watch %s@%s: %w", id, src.Group, err)
		}
		w.mu.Lock()
		w.listeners = append(w.listeners, lis)
		w.mu.Unlock()
	}
	select {
	case <-w.ready:
	case <-time.After(wait):
		store.log.Warn().Strs("data_ids", ids).Dur("waited", wait).Msg("inference config not read yet; built-in defaults serve until Nacos answers")
	}
	return w, nil
}

func (w *Watcher) deliver(layer int, e nacosreg.ConfigEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Deleted {
		w.contents[layer] = ""
	} else {
		w.contents[layer] = e.Content
	}
	w.delivered[layer] = true
	for _, d := range w.delivered {
		if !d {
			return // wait for every layer's first state, then apply once
		}
	}
	source := "nacos:" + w.src.Group + "/" + w.src.DataIDs()[0]
	var docs [][]byte
	present := false
	for i, c := range w.contents {
		if c != "" {
			present = true
			if i > 0 {
				source += "+" + w.src.DataIDs()[i]
			}
		}
		docs = append(docs, []byte(c))
	}
	if !present {
		w.store.Deleted(source)
	} else {
		_, _ = w.store.Apply(source, docs...) // outcome logged and recorded by the store
	}
	w.readyOnce.Do(func() { close(w.ready) })
}

// Stop cancels the listeners. Idempotent.
func (w *Watcher) Stop() {
	w.stopOnce.Do(func() {
		w.mu.Lock()
		ls := w.listeners
		w.mu.Unlock()
		for _, l := range ls {
			l.Stop()
		}
	})
}
