package publish

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

// Writer is what the publisher needs of Nacos (nacosreg.Client has both):
// the first write registers, later ones update.
type Writer interface {
	Register(nacosreg.Registration) error
	Update(nacosreg.Registration) error
}

// Counters are the publisher's metrics.
type Counters struct {
	Writes   uint64 // successful writes
	Skips    uint64 // cycles where nothing was worth a write
	Failures uint64 // failed writes (retried next cycle)
}

// Publisher writes an instance's metadata when Decide says so.
type Publisher struct {
	// immutable after New
	w       Writer
	base    nacosreg.Registration // identity; Metadata and Enabled are set per write
	enc     metadata.Encoder
	policy  Policy
	now     func() time.Time
	log     zerolog.Logger
	onWrite func(map[string]string)

	// owned by the goroutine that calls Offer
	st State

	// atomic: read by metrics from any goroutine
	writes, skips, failures atomic.Uint64

	mu      sync.Mutex // guards written
	written map[string]string
}

// Options configure a Publisher.
type Options struct {
	Policy Policy
	// Budget is the metadata size budget (default metadata.DefaultBudget).
	Budget int
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger zerolog.Logger
}

// New returns a Publisher for the instance identified by base.
func New(w Writer, base nacosreg.Registration, o Options) *Publisher {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Publisher{w: w, base: base, enc: metadata.Encoder{Budget: o.Budget}, policy: o.Policy.WithDefaults(),
		now: o.Now, log: o.Logger.With().Str("component", "publish").Logger()}
}

// Offer quantises desired, decides and, when worth it, writes. It returns
// whether it wrote and the write error, if any; after a failure the desired
// state is kept and the next Offer retries. enabled is the Nacos enabled
// flag (false keeps naive Nacos clients away while not ACTIVE).
func (p *Publisher) Offer(desired metadata.Instance, enabled bool) (bool, error) {
	now := p.now()
	q := Quantize(p.st.Last, desired)
	why := Decide(p.policy, p.st, q, enabled, now)
	if why == ReasonNone {
		p.skips.Add(1)
		return false, nil
	}
	q.UpdatedAt = metadata.IntOf(now.Unix())
	md, rep, err := p.enc.Encode(q)
	if err != nil {
		p.log.Error().Err(err).Msg("metadata does not fit the budget; writing mandatory keys only")
	}
	if len(rep.Shortened) > 0 {
		p.log.Debug().Strs("shortened", rep.Shortened).Int("size", rep.Size).Msg("metadata shortened to fit budget")
	}
	reg := p.base
	reg.Metadata, reg.Enabled = md, enabled
	write := p.w.Update
	if !p.st.Written {
		write = p.w.Register
	}
	if err := write(reg); err != nil {
		p.failures.Add(1)
		p.st.Failed = true
		p.log.Warn().Err(err).Str("reason", string(why)).Msg("metadata write failed; retrying next cycle")
		return false, err
	}
	p.writes.Add(1)
	p.st = State{Written: true, Last: q, Enabled: enabled, LastWrite: now}
	p.mu.Lock()
	p.written = md
	p.mu.Unlock()
	p.log.Debug().Str("reason", string(why)).Int("size", rep.Size).Msg("metadata written")
	return true, nil
}

// Counters returns the write, skip and failure counts.
func (p *Publisher) Counters() Counters {
	return Counters{Writes: p.writes.Load(), Skips: p.skips.Load(), Failures: p.failures.Load()}
}

// LastWritten returns the metadata of the last successful write (nil before
// any). The map must not be modified.
func (p *Publisher) LastWritten() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.written
}
