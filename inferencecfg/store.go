package inferencecfg

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// State says what the current config is.
type State string

// States.
const (
	// StateDefaults: no config in Nacos; the built-in defaults serve.
	StateDefaults State = "defaults"
	// StateApplied: the current config came from Nacos.
	StateApplied State = "applied"
	// StateKeptAfterDelete: the config was deleted in Nacos; the last good
	// one keeps serving.
	StateKeptAfterDelete State = "kept-after-delete"
)

// Rejection records a document that was not applied.
type Rejection struct {
	// Digest identifies the rejected content (sha256 prefix of the raw
	// bytes; a rejected document has no revision).
	Digest string    `json:"digest"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Status is the store's state for the admin endpoint and metrics.
type Status struct {
	Rev           string     `json:"rev"`
	State         State      `json:"state"`
	Source        string     `json:"source"`
	Since         time.Time  `json:"since"`
	Applies       uint64     `json:"applies"`
	Rejections    uint64     `json:"rejections"`
	LastRejection *Rejection `json:"last_rejection,omitempty"`
}

// Store holds the current Config. Current is lock-free; Apply, Deleted and
// subscriber calls are serialised by the store.
type Store struct {
	cur atomic.Pointer[Config]

	log zerolog.Logger
	now func() time.Time

	mu     sync.Mutex // serialises changes; guards subs and status
	subs   map[int]func(old, new *Config)
	nextID int
	status Status
}

// NewStore returns a store serving DefaultConfig. now may be nil (time.Now).
func NewStore(log zerolog.Logger, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	s := &Store{log: log.With().Str("component", "inferencecfg").Logger(), now: now, subs: map[int]func(old, new *Config){}}
	d := DefaultConfig()
	s.cur.Store(d)
	s.status = Status{Rev: d.Rev, State: StateDefaults, Source: d.Source, Since: now()}
	return s
}

// Current returns the config in force. Lock-free and allocation-free; the
// result must not be modified.
func (s *Store) Current() *Config { return s.cur.Load() }

// Subscribe calls fn after every swap, with the old and new config, on the
// goroutine that applied the change. The returned func unsubscribes.
func (s *Store) Subscribe(fn func(old, new *Config)) (cancel func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	s.subs[id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, id)
	}
}

// Apply parses doc (layered: later documents override earlier ones, e.g.
// the fleet-wide config then the service's) and swaps it in. An identical
// revision is a no-op (applied=false, nil error); an invalid document is
// rejected with the current config kept, and the rejection recorded.
func (s *Store) Apply(source string, docs ...[]byte) (applied bool, err error) {
	cfg, err := ParseLayers(docs...)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	if err != nil {
		h := sha256.New()
		for _, d := range docs {
			h.Write(d)
		}
		rej := &Rejection{Digest: hex.EncodeToString(h.Sum(nil))[:8], Reason: err.Error(), At: s.now()}
		s.status.Rejections++
		s.status.LastRejection = rej
		s.log.Warn().Str("source", source).Str("digest", rej.Digest).Str("keeping_rev", old.Rev).Str("reason", rej.Reason).
			Msg("inference config rejected; last good config keeps serving")
		return false, err
	}
	cfg.Source = source
	if cfg.Rev == old.Rev && s.status.State == StateApplied {
		s.log.Debug().Str("rev", cfg.Rev).Msg("inference config unchanged")
		return false, nil
	}
	s.swap(old, cfg, StateApplied)
	s.log.Info().Str("source", source).Str("from", old.Rev).Str("to", cfg.Rev).Strs("changed", Keys(old, cfg)).
		Msg("inference config applied")
	return true, nil
}

// Deleted records that the config was removed from Nacos: the last good
// config keeps serving (the built-in defaults if there never was one).
func (s *Store) Deleted(source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	if s.status.State != StateApplied {
		s.log.Info().Str("source", source).Str("rev", cur.Rev).Msg("no inference config in Nacos; built-in defaults serve")
		return
	}
	s.status.State, s.status.Since = StateKeptAfterDelete, s.now()
	s.log.Warn().Str("source", source).Str("keeping_rev", cur.Rev).Msg("inference config deleted in Nacos; last good config keeps serving")
}

// swap must be called with mu held.
func (s *Store) swap(old, cfg *Config, st State) {
	s.cur.Store(cfg)
	s.status.Rev, s.status.State, s.status.Source, s.status.Since = cfg.Rev, st, cfg.Source, s.now()
	s.status.Applies++
	for _, fn := range s.subs {
		fn(old, cfg)
	}
}

// Status returns a copy of the store's status.
func (s *Store) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	if st.LastRejection != nil {
		r := *st.LastRejection
		st.LastRejection = &r
	}
	return st
}
