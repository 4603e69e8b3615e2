package shutdown

import "github.com/nacos-ai-bridge/nacos-ai-bridge/internal/clock"

// Clock is the time source of a Plan, injected so that tests can run a
// 30-second drain in microseconds.
type Clock = clock.Clock

// SystemClock is the real Clock; a Plan with a nil Clock uses it.
type SystemClock = clock.System
