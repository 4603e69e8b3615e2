package metadata

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"unsafe"
)

// ErrBudget is returned when even the keys that are never dropped do not fit
// the budget.
var ErrBudget = errors.New("metadata: budget too small for the mandatory keys")

// Encoder writes Instances as Nacos metadata within a size budget.
type Encoder struct {
	// Budget is the limit on the characters of all keys plus values;
	// 0 means DefaultBudget. Raise it only for servers whose limit was raised.
	Budget int
}

// EncodeReport says what the encoder had to shorten to fit the budget.
type EncodeReport struct {
	// Size is the characters of keys plus values written.
	Size int
	// Shortened lists keys that were truncated or dropped, in order.
	Shortened []string
}

// Encode writes in with the default budget. The keys that are never dropped
// always fit DefaultBudget, so the result is complete up to shortening.
func (in Instance) Encode() map[string]string {
	m, _, _ := Encoder{}.Encode(in)
	return m
}

// maxString caps free-form values (model names, versions, regions) so that
// one odd value cannot crowd out the rest.
const maxString = 96

// Shortening order when over budget, first applied first:
//  1. Extra keys, by key in reverse order;
//  2. loaded.models truncated, keeping a "+N" marker of the models left out;
//  3. supported.tasks and locales truncated the same way;
//  4. optional signals dropped: warm.reason, kv.cache.usage, gpu.util, inference.latency.p50,
//     config.rev, region, model.version, gpu.mixed, max.tokens, queue.depth,
//     inflight, gpu.memory.total, gpu.count, gpu.model, max.concurrent,
//     instance.weight, inference.latency.p95, gpu.memory.available,
//     locales, supported.tasks, loaded.models.
//
// Never dropped: schema, lifecycle, warm.status, inference.healthy,
// gpu.healthy, updated.at.
var dropOrder = [...]string{
	KeyWarmReason, KeyKVCacheUsage, KeyGPUUtil, KeyLatencyP50, KeyConfigRev, KeyRegion, KeyModelVersion,
	KeyGPUMixed, KeyMaxTokens, KeyQueueDepth, KeyInflight, KeyGPUMemTotal, KeyGPUCount,
	KeyGPUModel, KeyMaxConcurrent, KeyInstanceWeight, KeyLatencyP95, KeyGPUMemAvailable,
	KeyLocales, KeySupportedTasks, KeyLoadedModels,
}

type span struct {
	key        string
	start, end int // value bytes in buf
	dropped    bool
}

type encodeState struct {
	buf   []byte
	pairs []span
}

func (s *encodeState) add(key string, write func([]byte) []byte) {
	start := len(s.buf)
	s.buf = write(s.buf)
	s.pairs = append(s.pairs, span{key: key, start: start, end: len(s.buf)})
}

func (s *encodeState) str(key, v string) {
	if v == "" {
		return
	}
	if len(v) > maxString {
		v = v[:maxString]
	}
	s.add(key, func(b []byte) []byte { return append(b, v...) })
}

func (s *encodeState) int(key string, v Int) {
	if !v.Set {
		return
	}
	s.add(key, func(b []byte) []byte { return strconv.AppendInt(b, v.V, 10) })
}

func (s *encodeState) tri(key string, v Tri) {
	switch v {
	case True:
		s.add(key, func(b []byte) []byte { return append(b, "true"...) })
	case False:
		s.add(key, func(b []byte) []byte { return append(b, "false"...) })
	}
}

func (s *encodeState) list(key string, items []string, more int) {
	if len(items) == 0 && more == 0 {
		return
	}
	s.add(key, func(b []byte) []byte { return appendList(b, items, len(items), more) })
}

// appendList writes the first n items and, when some are left out, "+N".
func appendList(b []byte, items []string, n, more int) []byte {
	sep := false
	for _, it := range items[:n] {
		if it == "" {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		for i := 0; i < len(it); i++ { // a comma inside an item would split it
			if c := it[i]; c == ',' {
				b = append(b, '_')
			} else {
				b = append(b, c)
			}
		}
	}
	if left := more + len(items) - n; left > 0 {
		if sep {
			b = append(b, ',')
		}
		b = append(b, '+')
		b = strconv.AppendInt(b, int64(left), 10)
	}
	return b
}

func (s *encodeState) size() int {
	n := 0
	for _, p := range s.pairs {
		if !p.dropped {
			n += len(p.key) + p.end - p.start
		}
	}
	return n
}

func (s *encodeState) find(key string) *span {
	for i := range s.pairs {
		if s.pairs[i].key == key && !s.pairs[i].dropped {
			return &s.pairs[i]
		}
	}
	return nil
}

// Encode writes in within e's budget and reports what it shortened.
func (e Encoder) Encode(in Instance) (map[string]string, EncodeReport, error) {
	budget := e.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	var pairsArr [32]span
	s := encodeState{buf: make([]byte, 0, 512), pairs: pairsArr[:0]}

	s.int(KeySchema, IntOf(Version))
	s.str(KeyLifecycle, string(in.Lifecycle))
	s.str(KeyWarmStatus, string(in.Warm))
	s.str(KeyWarmReason, in.WarmReason)
	s.tri(KeyInferenceHealthy, in.InferenceHealthy)
	s.tri(KeyGPUHealthy, in.GPUHealthy)
	s.int(KeyUpdatedAt, in.UpdatedAt)
	s.int(KeyLatencyP50, in.LatencyP50)
	s.int(KeyLatencyP95, in.LatencyP95)
	s.str(KeyGPUModel, in.GPUModel)
	if in.GPUMixed {
		s.str(KeyGPUMixed, "true")
	}
	s.int(KeyGPUCount, in.GPUCount)
	s.int(KeyGPUMemTotal, in.GPUMemTotal)
	s.int(KeyGPUMemAvailable, in.GPUMemAvailable)
	s.int(KeyGPUUtil, in.GPUUtil)
	s.list(KeyLoadedModels, in.LoadedModels, in.LoadedModelsMore)
	s.str(KeyModelVersion, in.ModelVersion)
	s.int(KeyMaxConcurrent, in.MaxConcurrent)
	s.int(KeyMaxTokens, in.MaxTokens)
	s.list(KeySupportedTasks, in.SupportedTasks, 0)
	s.int(KeyInstanceWeight, in.Weight)
	s.int(KeyQueueDepth, in.QueueDepth)
	s.int(KeyInflight, in.Inflight)
	s.int(KeyKVCacheUsage, in.KVCacheUsage)
	s.list(KeyLocales, in.Locales, 0)
	s.str(KeyRegion, in.Region)
	s.str(KeyConfigRev, in.ConfigRev)
	nKnown := len(s.pairs)
	if len(in.Extra) > 0 {
		keys := make([]string, 0, len(in.Extra))
		for k := range in.Extra {
			if !isKnown(k) { // a known key cannot be overridden through Extra
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := in.Extra[k]
			s.add(k, func(b []byte) []byte { return append(b, v...) })
		}
	}

	var rep EncodeReport
	if size := s.size(); size > budget {
		if err := s.shorten(in, budget, nKnown, &rep); err != nil {
			return s.result(), rep, err
		}
	}
	rep.Size = s.size()
	return s.result(), rep, nil
}

func (s *encodeState) shorten(in Instance, budget, nKnown int, rep *EncodeReport) error {
	// 1. Extra keys, last first.
	for i := len(s.pairs) - 1; i >= nKnown && s.size() > budget; i-- {
		s.pairs[i].dropped = true
		rep.Shortened = append(rep.Shortened, s.pairs[i].key)
	}
	// 2-3. Lists, truncated with a "+N" marker.
	for _, l := range []struct {
		key   string
		items []string
		more  int
	}{{KeyLoadedModels, in.LoadedModels, in.LoadedModelsMore}, {KeySupportedTasks, in.SupportedTasks, 0}, {KeyLocales, in.Locales, 0}} {
		over := s.size() - budget
		p := s.find(l.key)
		if over <= 0 || p == nil {
			continue
		}
		room := p.end - p.start - over // characters the value may keep
		n := len(l.items)
		for n > 0 && len(appendList(nil, l.items, n, l.more)) > room {
			n--
		}
		start := len(s.buf)
		s.buf = appendList(s.buf, l.items, n, l.more)
		p.start, p.end = start, len(s.buf)
		rep.Shortened = append(rep.Shortened, l.key)
	}
	// 4. Optional keys dropped.
	for _, k := range dropOrder {
		if s.size() <= budget {
			return nil
		}
		if p := s.find(k); p != nil {
			p.dropped = true
			rep.Shortened = append(rep.Shortened, k)
		}
	}
	if size := s.size(); size > budget {
		return fmt.Errorf("%w: %d characters needed, budget %d", ErrBudget, size, budget)
	}
	return nil
}

// result builds the map. Values are views into buf, which is never written
// again after this point, so they are ordinary immutable strings; it saves
// one allocation per value on a path that runs every health cycle.
func (s *encodeState) result() map[string]string {
	m := make(map[string]string, len(s.pairs))
	for _, p := range s.pairs {
		if p.dropped {
			continue
		}
		if p.end == p.start {
			m[p.key] = ""
			continue
		}
		m[p.key] = unsafe.String(&s.buf[p.start], p.end-p.start)
	}
	return m
}

var known = func() map[string]bool {
	m := make(map[string]bool, len(Fields))
	for _, f := range Fields {
		m[f.Key] = true
	}
	return m
}()

func isKnown(k string) bool { return known[k] }

// Size returns the bytes of keys plus values of m. Java Nacos counts UTF-16
// characters, never more than UTF-8 bytes, so a map within Size fits.
func Size(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}
