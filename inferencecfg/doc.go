// Package inferencecfg is the inference configuration operators edit in the
// Nacos console: its model (defaults plus per-model overrides), a strict
// parser and validator with messages a person can act on, and a Store that
// hot-applies new revisions atomically.
//
// Parse is pure: it reads YAML (JSON is YAML), rejects unknown keys with the
// closest known key suggested, wrong types, duplicates, empty, oversized and
// deeply nested documents, applies defaults, validates ranges with
// validator/v10 and returns every problem found, each naming the key path,
// the value and the rule.
//
// Store.Current is lock-free and allocation-free and may be called from any
// goroutine; Apply is meant to be called from one goroutine (the config
// listener), and subscribers are called on that goroutine after each swap.
package inferencecfg
