package warmup

import "github.com/nacos-ai-bridge/nacos-ai-bridge/internal/clock"

// Clock is the time source of Run and Until: Now measures rounds and the
// total budget, Sleep waits out back-off. Injected so that tests can drive a
// whole warm-up schedule without real waiting.
type Clock = clock.Clock

// RealClock is the wall clock.
type RealClock = clock.System
