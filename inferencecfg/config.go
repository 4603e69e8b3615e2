package inferencecfg

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// Params are the inference parameters for one model (or the defaults).
type Params struct {
	Temperature         float64 `json:"temperature" yaml:"temperature" validate:"gte=0,lte=2"`
	TopP                float64 `json:"top-p" yaml:"top-p" validate:"gt=0,lte=1"`
	MaxTokens           int     `json:"max-tokens" yaml:"max-tokens" validate:"gte=1"`
	ConfidenceThreshold float64 `json:"confidence-threshold" yaml:"confidence-threshold" validate:"gte=0,lte=1"`
	BatchSize           int     `json:"batch-size" yaml:"batch-size" validate:"gte=1,lte=1024"`
	TimeoutMS           int     `json:"timeout-ms" yaml:"timeout-ms" validate:"gte=100,lte=600000"`
	RetryCount          int     `json:"retry-count" yaml:"retry-count" validate:"gte=0,lte=5"`
}

// Defaults are the built-in parameters, used for keys a document leaves out
// and, with no document at all, for everything.
var Defaults = Params{
	Temperature:         0.7,
	TopP:                1.0,
	MaxTokens:           512,
	ConfidenceThreshold: 0.85,
	BatchSize:           16,
	TimeoutMS:           30000,
	RetryCount:          2,
}

// DefaultMaxTokensLimit bounds max-tokens unless the document sets
// max-tokens-limit.
const DefaultMaxTokensLimit = 32768

// Config is a parsed, validated, immutable configuration. Do not modify it:
// the Store shares one Config between every reader.
type Config struct {
	// Defaults apply to every model without an override.
	Defaults Params `json:"defaults"`
	// MaxTokensLimit is the largest max-tokens any model may use.
	MaxTokensLimit int `json:"max-tokens-limit"`
	// Models are the effective parameters of each overridden model
	// (defaults with the override applied).
	Models map[string]Params `json:"models,omitempty"`
	// Rev is a short hash of the normalised content: formatting and
	// comments do not change it, any value does.
	Rev string `json:"-"`
	// Source says where it came from: "defaults", or "nacos:<dataId>".
	Source string `json:"-"`
}

// For returns the parameters for model ("" for the defaults).
func (c *Config) For(model string) Params {
	if p, ok := c.Models[model]; ok {
		return p
	}
	return c.Defaults
}

// Keys lists the parameters that differ between a and b, as key paths, for
// the "applied rev X -> Y" log line.
func Keys(a, b *Config) []string {
	var out []string
	diff := func(prefix string, x, y Params) {
		for _, f := range paramFields {
			if f.get(x) != f.get(y) {
				out = append(out, prefix+f.key)
			}
		}
	}
	diff("inference.", a.Defaults, b.Defaults)
	if a.MaxTokensLimit != b.MaxTokensLimit {
		out = append(out, "inference.max-tokens-limit")
	}
	names := map[string]bool{}
	for m := range a.Models {
		names[m] = true
	}
	for m := range b.Models {
		names[m] = true
	}
	sorted := make([]string, 0, len(names))
	for m := range names {
		sorted = append(sorted, m)
	}
	sort.Strings(sorted)
	for _, m := range sorted {
		diff("inference.models."+m+".", a.For(m), b.For(m))
	}
	return out
}

// DefaultConfig is the configuration in force when Nacos holds none.
func DefaultConfig() *Config {
	c := &Config{Defaults: Defaults, MaxTokensLimit: DefaultMaxTokensLimit, Source: "defaults"}
	c.Rev = c.revision()
	return c
}

// revision hashes the canonical JSON of the effective values (map keys are
// sorted by encoding/json), so it is the same for any document that means
// the same thing.
func (c *Config) revision() string {
	b, err := json.Marshal(c)
	if err != nil { // cannot happen for these types
		panic(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:4])
}
