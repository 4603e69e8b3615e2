package bridge

import (
	"fmt"
	"slices"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
)

// Event records one state transition, for the log, the admin endpoint and
// subscribers. Every language reads the same two state machines from the
// instance metadata: lifecycle REGISTERED -> ACTIVE -> DRAINING -> STOPPED
// and warm status cold -> warming -> ready.
type Event struct {
	Instance string    `json:"instance"`
	Service  string    `json:"service"`
	Kind     string    `json:"kind"` // "lifecycle" or "warm"
	From     string    `json:"from"`
	To       string    `json:"to"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

// ErrIllegalTransition is wrapped by Machine's errors.
var ErrIllegalTransition = fmt.Errorf("bridge: illegal transition")

// lifecycleEdges lists the legal lifecycle transitions.
//   - REGISTERED -> ACTIVE once warm; ACTIVE -> REGISTERED when the backend
//     goes cold again (out of rotation until warmed up);
//   - any live state -> DRAINING on shutdown; DRAINING -> STOPPED after the
//     drain; REGISTERED -> STOPPED when there was nothing to drain;
//   - STOPPED is final, and a drain is never cancelled.
var lifecycleEdges = map[metadata.Lifecycle][]metadata.Lifecycle{
	metadata.Registered: {metadata.Active, metadata.Draining, metadata.Stopped},
	metadata.Active:     {metadata.Registered, metadata.Draining},
	metadata.Draining:   {metadata.Stopped},
}

// warmEdges lists the legal warm transitions: a failed warm-up and a backend
// restart both go back to cold.
var warmEdges = map[metadata.WarmStatus][]metadata.WarmStatus{
	metadata.Cold:    {metadata.Warming},
	metadata.Warming: {metadata.Ready, metadata.Cold},
	metadata.Ready:   {metadata.Cold},
}

// Machine is the instance's two state machines with a bounded event log.
// Pure: no I/O, no clock (the caller passes the time). Not safe for
// concurrent use; the Bridge guards it.
type Machine struct {
	instance, service string
	lc                metadata.Lifecycle
	warm              metadata.WarmStatus
	log               []Event // ring, oldest first after wrap
	next              int
	full              bool
}

// NewMachine starts an instance REGISTERED and cold; keep bounds the event
// log (default 64).
func NewMachine(instance, service string, keep int) *Machine {
	if keep <= 0 {
		keep = 64
	}
	return &Machine{instance: instance, service: service, lc: metadata.Registered, warm: metadata.Cold, log: make([]Event, keep)}
}

// Lifecycle returns the current lifecycle state.
func (m *Machine) Lifecycle() metadata.Lifecycle { return m.lc }

// Warm returns the current warm status.
func (m *Machine) Warm() metadata.WarmStatus { return m.warm }

// Routable reports whether the instance may take traffic: ACTIVE and ready.
func (m *Machine) Routable() bool { return m.lc == metadata.Active && m.warm == metadata.Ready }

// SetLifecycle moves to `to`. A transition to the current state is a no-op
// (ok=false, nil error); an illegal one is an error and changes nothing.
func (m *Machine) SetLifecycle(to metadata.Lifecycle, reason string, now time.Time) (Event, bool, error) {
	if to == m.lc {
		return Event{}, false, nil
	}
	if !slices.Contains(lifecycleEdges[m.lc], to) {
		return Event{}, false, fmt.Errorf("%w: lifecycle %s -> %s (%s)", ErrIllegalTransition, m.lc, to, reason)
	}
	if to == metadata.Active && m.warm != metadata.Ready {
		return Event{}, false, fmt.Errorf("%w: lifecycle %s -> ACTIVE while %s (%s)", ErrIllegalTransition, m.lc, m.warm, reason)
	}
	e := Event{Instance: m.instance, Service: m.service, Kind: "lifecycle", From: string(m.lc), To: string(to), Reason: reason, At: now}
	m.lc = to
	m.record(e)
	return e, true, nil
}

// SetWarm moves the warm status to `to`, with the same rules as SetLifecycle.
// Warm-up only runs in a live instance: not once DRAINING or STOPPED.
func (m *Machine) SetWarm(to metadata.WarmStatus, reason string, now time.Time) (Event, bool, error) {
	if to == m.warm {
		return Event{}, false, nil
	}
	if !slices.Contains(warmEdges[m.warm], to) {
		return Event{}, false, fmt.Errorf("%w: warm %s -> %s (%s)", ErrIllegalTransition, m.warm, to, reason)
	}
	if to == metadata.Warming && (m.lc == metadata.Draining || m.lc == metadata.Stopped) {
		return Event{}, false, fmt.Errorf("%w: warm-up while %s (%s)", ErrIllegalTransition, m.lc, reason)
	}
	e := Event{Instance: m.instance, Service: m.service, Kind: "warm", From: string(m.warm), To: string(to), Reason: reason, At: now}
	m.warm = to
	m.record(e)
	return e, true, nil
}

func (m *Machine) record(e Event) {
	m.log[m.next] = e
	m.next = (m.next + 1) % len(m.log)
	if m.next == 0 {
		m.full = true
	}
}

// Events returns the recorded events, oldest first (a copy).
func (m *Machine) Events() []Event {
	if !m.full {
		return append([]Event(nil), m.log[:m.next]...)
	}
	return append(append([]Event(nil), m.log[m.next:]...), m.log[:m.next]...)
}
