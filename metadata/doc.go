// Package metadata is the wire contract between a bridge and every reader of
// Nacos instance metadata: schema v1, its encoder and its tolerant decoder.
//
// schema.go is the single source of key names; README.md documents them for
// Java and Python readers. The package is pure: no I/O, no clock, no
// goroutines, safe for concurrent use.
//
// Encoding guarantees a budget on the characters of keys plus values (Java
// Nacos 2.3+ rejects metadata over 1024) by shortening fields in a stated
// order; it never drops the lifecycle, warm, health or schema keys.
// Decoding never fails a whole instance: a malformed value leaves that field
// unknown (distinguishable from zero) and is reported; unknown keys are kept
// aside in Instance.Extra.
package metadata
