// Package publish decides when an instance's metadata is worth writing to
// Nacos, and writes it.
//
// Every metadata write is a re-register that Nacos pushes, as the whole
// instance list, to every subscriber of the service. So noisy signals are
// quantised with hysteresis (VRAM to ~1% of total, utilisation to 5 points,
// latency to ~10% buckets, queue depth to powers of two) and a write happens:
//   - at once on a change of lifecycle, warm status, health, enabled flag,
//     loaded models, tasks, limits, weight or config revision;
//   - for other quantised changes, no more often than MinInterval;
//   - at least every Heartbeat, refreshing updated.at, so readers can tell
//     fresh signals from stale ones.
//
// The decision code (Quantize, Decide) is pure and table-tested. Publisher
// adds the write and counters; it is driven by one goroutine (the bridge's
// health loop), while its counters may be read from any goroutine.
package publish
