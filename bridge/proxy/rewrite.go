package proxy

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
)

// outcome says what rewriteBody did, for the counters.
type outcome uint8

const (
	unchanged outcome = iota // valid object, nothing to do
	filled                   // fields filled, nothing clamped
	clamped                  // at least one token limit clamped (maybe filled too)
	malformed                // not a JSON object: passed through as is
)

// The request fields the rewrite reads or writes; everything else is copied
// byte for byte.
var (
	keyModel     = []byte("model")
	keyTemp      = []byte("temperature")
	keyTopP      = []byte("top_p")
	keyMaxTokens = []byte("max_tokens")
	keyMaxCompl  = []byte("max_completion_tokens")
)

// span is the position of a top-level member's value in the body.
type span struct{ start, end int }

// edit replaces body[start:end] with text; start == end inserts.
type edit struct {
	start, end int
	text       []byte
}

// rewriteBody applies cfg to an OpenAI-compatible request body and returns
// the new body and what it did. When nothing changes (or the body is not a
// JSON object) it returns body itself.
//
// It does not decode the body into a map and re-encode it: that would sort
// the keys, drop duplicates and re-escape strings (encoding/json escapes <, >
// and & inside RawMessage). Instead it validates the body with json.Valid,
// finds the top-level members with a small scanner (safe because the input is
// known to be valid), and splices the few values it changes in place. Every
// other byte — member order, whitespace, string escapes, number spelling —
// is preserved; members it adds go after the last member.
//
// The rules, per request:
//   - temperature, top_p: set from the model's params when absent or null;
//     a present value is the caller's choice and is kept.
//   - max_tokens: when neither max_tokens nor max_completion_tokens has a
//     non-null value, max_tokens is set to the cap. max_tokens is not added
//     beside max_completion_tokens, since OpenAI rejects requests with both.
//   - max_tokens and max_completion_tokens: a number above the cap is clamped
//     to the cap. The cap is the model's MaxTokens, bounded by
//     cfg.MaxTokensLimit. Non-numbers, and numbers at or below the cap, are
//     left for the backend to judge.
//   - model selects the per-model params (cfg.For); a missing or non-string
//     model gets the defaults.
func rewriteBody(body []byte, cfg *inferencecfg.Config) ([]byte, outcome) {
	if !json.Valid(body) {
		return body, malformed
	}
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return body, malformed // valid JSON, but not an object
	}

	var (
		model            []byte
		modelEsc         bool
		temps, topPs     []span // null occurrences only
		tempSet, topPSet bool   // a non-null occurrence exists
		maxNull          []span // max_tokens: null occurrences
		maxNums          []span // max_tokens and max_completion_tokens: non-null values
		maxSet           bool   // either has a non-null value
		insertAt         = i + 1
		first            = true
	)
	i = skipWS(body, i+1)
	for body[i] != '}' {
		ks, ke := i, skipString(body, i)
		key := body[ks+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			// An escaped key ("max\u005ftokens") means the same to the
			// backend's parser, so compare its decoded form.
			var s string
			_ = json.Unmarshal(body[ks:ke], &s) // valid: checked above
			key = []byte(s)
		}
		vs := skipWS(body, skipWS(body, ke)+1) // skip ':' and whitespace
		ve := skipValue(body, vs)
		v := span{vs, ve}
		isNull := bytes.Equal(body[vs:ve], []byte("null"))
		switch {
		case bytes.Equal(key, keyModel):
			if body[vs] == '"' {
				model = body[vs:ve]
				modelEsc = bytes.IndexByte(model, '\\') >= 0
			} else {
				model = nil
			}
		case bytes.Equal(key, keyTemp):
			if isNull {
				temps = append(temps, v)
			} else {
				tempSet = true
			}
		case bytes.Equal(key, keyTopP):
			if isNull {
				topPs = append(topPs, v)
			} else {
				topPSet = true
			}
		case bytes.Equal(key, keyMaxTokens), bytes.Equal(key, keyMaxCompl):
			switch {
			case !isNull:
				maxSet = true
				maxNums = append(maxNums, v)
			case bytes.Equal(key, keyMaxTokens):
				maxNull = append(maxNull, v)
			}
		}
		insertAt, first = ve, false
		i = skipWS(body, ve)
		if body[i] == ',' {
			i = skipWS(body, i+1)
		}
	}

	var name string
	switch {
	case model == nil:
	case modelEsc:
		_ = json.Unmarshal(model, &name)
	default:
		name = string(model[1 : len(model)-1])
	}
	p := cfg.For(name)
	limit := p.MaxTokens
	if cfg.MaxTokensLimit > 0 && (limit <= 0 || limit > cfg.MaxTokensLimit) {
		limit = cfg.MaxTokensLimit
	}

	var edits []edit
	var added []byte // members appended after the last one
	add := func(key []byte, val []byte) {
		if !first || len(added) > 0 {
			added = append(added, ',')
		}
		added = append(added, '"')
		added = append(added, key...)
		added = append(added, '"', ':')
		added = append(added, val...)
	}
	fill := func(set bool, nulls []span, key, val []byte) {
		switch {
		case set:
		case len(nulls) > 0:
			for _, s := range nulls {
				edits = append(edits, edit{s.start, s.end, val})
			}
		default:
			add(key, val)
		}
	}
	if t, ok := formatFloat(p.Temperature); ok {
		fill(tempSet, temps, keyTemp, t)
	}
	if t, ok := formatFloat(p.TopP); ok {
		fill(topPSet, topPs, keyTopP, t)
	}
	out := unchanged
	if limit > 0 {
		capText := strconv.AppendInt(nil, int64(limit), 10)
		fill(maxSet, maxNull, keyMaxTokens, capText)
		for _, s := range maxNums {
			n, err := strconv.ParseFloat(string(body[s.start:s.end]), 64)
			if err == nil && n > float64(limit) {
				edits = append(edits, edit{s.start, s.end, capText})
				out = clamped
			}
		}
	}
	if len(added) > 0 {
		edits = append(edits, edit{insertAt, insertAt, added})
	}
	if len(edits) == 0 {
		return body, unchanged
	}
	if out != clamped {
		out = filled
	}
	return splice(body, edits), out
}

// splice applies non-overlapping edits to body and returns a new slice.
func splice(body []byte, edits []edit) []byte {
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	n := len(body)
	for _, e := range edits {
		n += len(e.text) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, e := range edits {
		out = append(out, body[prev:e.start]...)
		out = append(out, e.text...)
		prev = e.end
	}
	return append(out, body[prev:]...)
}

// formatFloat spells f the shortest way that reads back exactly, without an
// exponent (JSON allows one, but "0.7" is what a human expects to see in a
// captured request). It refuses NaN and ±Inf, which JSON cannot carry.
func formatFloat(f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	return strconv.AppendFloat(nil, f, 'f', -1, 64), true
}

// The scanner below assumes valid JSON (the caller checked json.Valid), so
// it only needs to find where things end, not to reject anything.

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte cannot end the string
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}
