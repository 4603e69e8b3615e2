// Package nacosreg is the project's only door to Nacos: a small client over
// nacos-sdk-go v2 for naming (register, update, deregister, list, subscribe)
// and config (get, listen, publish, delete).
//
// Everything above it depends on the small interfaces declared here, so it
// can be tested with fakes, while the integration tests under test/ run this
// package against real Nacos servers.
//
// What it fixes about the SDK's defaults:
//   - instances are registered ephemeral, set explicitly;
//   - the SDK's log and cache directories never default to the working
//     directory (they go under the user cache dir unless configured), its
//     cache is not loaded at start and empty instance lists are delivered;
//   - the SDK's log lines go to the zerolog logger passed in, at a quiet level;
//   - the subscribe callback, which the SDK runs on its gRPC receive goroutine,
//     only copies and stores the list and signals; a goroutine owned by the
//     Subscription converts it and calls the user's function;
//   - config changes, which the SDK hands over on a new goroutine each, are
//     serialised on one goroutine per Listener, re-read from the server so the
//     last delivered state is the newest, and deduplicated by MD5.
//
// Concurrency: a Client is safe for concurrent use. Callbacks for one
// Subscription or one Listener are never called concurrently with
// themselves. Close is idempotent and waits for the goroutines it owns.
package nacosreg
