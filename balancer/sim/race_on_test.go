//go:build race

package sim

// raceEnabled: under the race detector every atomic is instrumented, and
// the wlc policy, which computes a histogram quantile per candidate per
// pick, runs ~25x slower; the tests leave it to the run without -race.
const raceEnabled = true
