// Package metrics is the small part of Prometheus the bridge needs: a
// lock-free latency histogram and helpers that write the text exposition
// format (version 0.0.4) by hand.
//
// Why not client_golang: the admin endpoint renders a handful of series from
// snapshots the bridge and the proxy already keep, and the sidecar has a
// 40 MiB RSS budget. A registry, collectors and descriptors would be more
// code to run than the series themselves. The output is checked with the
// real parser (prometheus/common/expfmt) in the tests.
package metrics
