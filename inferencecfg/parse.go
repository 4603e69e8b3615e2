package inferencecfg

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-playground/validator/v10"
	"gopkg.in/yaml.v3"
)

// Limits on documents.
const (
	MaxDocumentBytes = 64 << 10
	maxDepth         = 8
	maxModels        = 256
)

// Problem is one thing wrong with a document.
type Problem struct {
	// Path is the key path, e.g. "inference.models.qwen.max-tokens".
	Path string
	// Msg says what is wrong and, where it can, what would be right.
	Msg string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// Problems is every problem Parse found; it is the error Parse returns.
type Problems []Problem

func (ps Problems) Error() string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return "inferencecfg: " + strings.Join(parts, "; ")
}

// paramField binds a YAML key to a Params field, for decoding overrides,
// diffing and suggestions.
type paramField struct {
	key   string
	isInt bool
	get   func(Params) float64
	set   func(*Params, float64)
}

var paramFields = []paramField{
	{"temperature", false, func(p Params) float64 { return p.Temperature }, func(p *Params, v float64) { p.Temperature = v }},
	{"top-p", false, func(p Params) float64 { return p.TopP }, func(p *Params, v float64) { p.TopP = v }},
	{"max-tokens", true, func(p Params) float64 { return float64(p.MaxTokens) }, func(p *Params, v float64) { p.MaxTokens = int(v) }},
	{"confidence-threshold", false, func(p Params) float64 { return p.ConfidenceThreshold }, func(p *Params, v float64) { p.ConfidenceThreshold = v }},
	{"batch-size", true, func(p Params) float64 { return float64(p.BatchSize) }, func(p *Params, v float64) { p.BatchSize = int(v) }},
	{"timeout-ms", true, func(p Params) float64 { return float64(p.TimeoutMS) }, func(p *Params, v float64) { p.TimeoutMS = int(v) }},
	{"retry-count", true, func(p Params) float64 { return float64(p.RetryCount) }, func(p *Params, v float64) { p.RetryCount = int(v) }},
}

func fieldByKey(k string) (paramField, bool) {
	for _, f := range paramFields {
		if f.key == k {
			return f, true
		}
	}
	return paramField{}, false
}

var validate = func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		return strings.Split(f.Tag.Get("yaml"), ",")[0]
	})
	return v
}()

// Parse reads, checks and validates a document. On any problem it returns
// a nil Config and Problems listing everything found.
func Parse(doc []byte) (*Config, error) {
	if len(doc) > MaxDocumentBytes {
		return nil, Problems{{Msg: fmt.Sprintf("document is %d bytes, over the %d-byte limit", len(doc), MaxDocumentBytes)}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, Problems{{Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if root.Kind == 0 || len(root.Content) == 0 || root.Content[0].Kind == yaml.ScalarNode && root.Content[0].Tag == "!!null" {
		return nil, Problems{{Msg: "empty document: want a mapping with an 'inference' key"}}
	}
	if d := depth(&root, 0); d > maxDepth {
		return nil, Problems{{Msg: fmt.Sprintf("document nests %d levels deep; at most %d are meaningful here", d, maxDepth)}}
	}
	p := &parser{}
	cfg := &Config{Defaults: Defaults, MaxTokensLimit: DefaultMaxTokensLimit}
	overrides := map[string]map[string]float64{}
	p.top(root.Content[0], cfg, overrides)
	if len(p.problems) > 0 {
		return nil, p.problems
	}
	// Ranges, through validator/v10, then the cross-field rule.
	p.validate("inference.", cfg.Defaults, cfg.MaxTokensLimit)
	cfg.Models = make(map[string]Params, len(overrides))
	for name, ov := range overrides {
		eff := cfg.Defaults
		for k, v := range ov {
			f, _ := fieldByKey(k)
			f.set(&eff, v)
		}
		cfg.Models[name] = eff
		p.validate("inference.models."+name+".", eff, cfg.MaxTokensLimit)
	}
	if len(cfg.Models) == 0 {
		cfg.Models = nil
	}
	if len(p.problems) > 0 {
		return nil, p.problems
	}
	cfg.Rev = cfg.revision()
	return cfg, nil
}

type parser struct{ problems Problems }

// pairs returns the key/value nodes of mapping n, reporting duplicate keys
// (yaml.v3 only rejects them when decoding into Go maps, not into nodes).
func (p *parser) pairs(path string, n *yaml.Node) [][2]*yaml.Node {
	seen := map[string]bool{}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		full := k.Value
		if path != "" {
			full = path + "." + k.Value
		}
		if seen[k.Value] {
			p.add(full, "duplicate key (line %d)", k.Line)
			continue
		}
		seen[k.Value] = true
		out = append(out, [2]*yaml.Node{k, v})
	}
	return out
}

func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func (p *parser) add(path, format string, a ...any) {
	p.problems = append(p.problems, Problem{Path: path, Msg: fmt.Sprintf(format, a...)})
}

func (p *parser) top(n *yaml.Node, cfg *Config, overrides map[string]map[string]float64) {
	if n.Kind != yaml.MappingNode {
		p.add("", "document must be a mapping with an 'inference' key, not %s", kindName(n))
		return
	}
	found := false
	for _, kv := range p.pairs("", n) {
		k, v := kv[0], kv[1]
		if k.Value != "inference" {
			p.unknown(k.Value, k.Value, []string{"inference"})
			continue
		}
		found = true
		p.inference(v, cfg, overrides)
	}
	if !found && len(p.problems) == 0 {
		p.add("", "missing the 'inference' key")
	}
}

func (p *parser) inference(n *yaml.Node, cfg *Config, overrides map[string]map[string]float64) {
	if n.Kind != yaml.MappingNode {
		p.add("inference", "must be a mapping, not %s", kindName(n))
		return
	}
	known := append(keysOf(), "models", "max-tokens-limit")
	for _, kv := range p.pairs("inference", n) {
		k, v := kv[0], kv[1]
		path := "inference." + k.Value
		switch {
		case k.Value == "models":
			p.models(v, overrides)
		case k.Value == "max-tokens-limit":
			if x, ok := p.number(path, v, true); ok {
				if x < 1 || x > 1<<24 {
					p.add(path, "%s is out of range 1..%d", v.Value, 1<<24)
				} else {
					cfg.MaxTokensLimit = int(x)
				}
			}
		default:
			f, ok := fieldByKey(k.Value)
			if !ok {
				p.unknown(path, k.Value, known)
				continue
			}
			if x, ok := p.number(path, v, f.isInt); ok {
				f.set(&cfg.Defaults, x)
			}
		}
	}
}

func (p *parser) models(n *yaml.Node, overrides map[string]map[string]float64) {
	if n.Kind != yaml.MappingNode {
		p.add("inference.models", "must be a mapping of model id to overrides, not %s", kindName(n))
		return
	}
	if len(n.Content)/2 > maxModels {
		p.add("inference.models", "%d models; at most %d", len(n.Content)/2, maxModels)
		return
	}
	for _, kv := range p.pairs("inference.models", n) {
		name, body := kv[0].Value, kv[1]
		base := "inference.models." + name
		if strings.TrimSpace(name) == "" {
			p.add(base, "empty model id")
			continue
		}
		if body.Kind != yaml.MappingNode {
			p.add(base, "must be a mapping of parameter overrides, not %s", kindName(body))
			continue
		}
		ov := map[string]float64{}
		for _, kv := range p.pairs(base, body) {
			k, v := kv[0], kv[1]
			path := base + "." + k.Value
			f, ok := fieldByKey(k.Value)
			if !ok {
				p.unknown(path, k.Value, keysOf())
				continue
			}
			if x, ok := p.number(path, v, f.isInt); ok {
				ov[k.Value] = x
			}
		}
		overrides[name] = ov
	}
}

// number reads a scalar as a number, integer when isInt.
func (p *parser) number(path string, n *yaml.Node, isInt bool) (float64, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.add(path, "want a number, got %s", kindName(n))
		return 0, false
	}
	if isInt {
		x, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			if f, ferr := strconv.ParseFloat(n.Value, 64); ferr == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return f, true // 2048.0 is an integer
			}
			p.add(path, "%q is not an integer", n.Value)
			return 0, false
		}
		if x > 1<<31 || x < -(1<<31) {
			p.add(path, "%s is out of range", n.Value)
			return 0, false
		}
		return float64(x), true
	}
	x, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		p.add(path, "%q is not a number", n.Value)
		return 0, false
	}
	return x, true
}

func (p *parser) validate(prefix string, params Params, limit int) {
	if err := validate.Struct(params); err != nil {
		var ves validator.ValidationErrors
		if !errors.As(err, &ves) {
			p.add(strings.TrimSuffix(prefix, "."), "%v", err)
			return
		}
		for _, fe := range ves {
			p.add(prefix+fe.Field(), "%s", rule(fe))
		}
	}
	if params.MaxTokens > limit {
		p.add(prefix+"max-tokens", "%d is above max-tokens-limit %d", params.MaxTokens, limit)
	}
}

// rule renders a validator failure in words.
func rule(fe validator.FieldError) string {
	v := fmt.Sprint(fe.Value())
	switch fe.Tag() {
	case "gte":
		return fmt.Sprintf("%s is below the minimum %s", v, fe.Param())
	case "lte":
		return fmt.Sprintf("%s is above the maximum %s", v, fe.Param())
	case "gt":
		return fmt.Sprintf("%s must be greater than %s", v, fe.Param())
	case "lt":
		return fmt.Sprintf("%s must be less than %s", v, fe.Param())
	}
	return fmt.Sprintf("%s fails rule %s=%s", v, fe.Tag(), fe.Param())
}

func (p *parser) unknown(path, key string, known []string) {
	if s := suggest(key, known); s != "" {
		p.add(path, "unknown key; did you mean %s?", s)
		return
	}
	p.add(path, "unknown key; known keys are %s", strings.Join(known, ", "))
}

func keysOf() []string {
	out := make([]string, len(paramFields))
	for i, f := range paramFields {
		out[i] = f.key
	}
	return out
}

// suggest returns the known key closest to key, when close enough to be a
// plausible typo (max_tokens, maxTokens, temprature).
func suggest(key string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", ".", "", " ", "").Replace(strings.ToLower(s))
	}
	best, bestD := "", 1<<30
	for _, k := range known {
		if norm(k) == norm(key) {
			return k
		}
		if d := levenshtein(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= max(2, len(best)/4) {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func depth(n *yaml.Node, d int) int {
	if d > maxDepth+1 {
		return d
	}
	best := d
	for _, c := range n.Content {
		if x := depth(c, d+1); x > best {
			best = x
		}
	}
	return best
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing (null)"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}
