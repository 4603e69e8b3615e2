package inferencecfg

import (
	"gopkg.in/yaml.v3"
)

// ParseLayers parses documents layered in order: each later document's keys
// override the earlier ones' (mappings merge, everything else replaces).
// Each document must be valid on its own; the merged result is validated
// too (e.g. a service's max-tokens against the fleet's max-tokens-limit).
// Empty documents are skipped; with none left, it is the built-in defaults.
func ParseLayers(docs ...[]byte) (*Config, error) {
	var present [][]byte
	for _, d := range docs {
		if len(d) > 0 {
			present = append(present, d)
		}
	}
	switch len(present) {
	case 0:
		return DefaultConfig(), nil
	case 1:
		return Parse(present[0])
	}
	var merged map[string]any
	for _, d := range present {
		if _, err := Parse(d); err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(d, &m); err != nil {
			return nil, Problems{{Msg: "not valid YAML: " + err.Error()}}
		}
		merged = merge(merged, m)
	}
	out, err := yaml.Marshal(merged)
	if err != nil {
		return nil, Problems{{Msg: "cannot merge layers: " + err.Error()}}
	}
	return Parse(out)
}

func merge(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}
