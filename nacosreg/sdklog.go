package nacosreg

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/common/logger"
	"github.com/rs/zerolog"
)

// sdkLogger routes the SDK's log lines into zerolog. The SDK keeps one
// process-wide logger; installing ours before a client is built also stops
// the SDK from opening its own log file.
type sdkLogger struct {
	log zerolog.Logger
	rep *repeats
}

var _ logger.Logger = sdkLogger{}

func newSDKLogger(base zerolog.Logger, level string) sdkLogger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.WarnLevel
	}
	l := base.With().Str("component", "nacos-sdk").Logger()
	if lvl > l.GetLevel() {
		l = l.Level(lvl)
	}
	return sdkLogger{log: l, rep: newRepeats(repeatWindow, time.Now)}
}

// repeatWindow is how long an SDK warning or error is held back after it
// was logged when the same line comes again. The SDK can repeat a line
// hundreds of times a second: when its per-config query limit is spent,
// its listen loop retries at once ("refresh content and check md5 fail")
// until the limit refills. One line every few seconds with a count says
// the same without flooding the log.
const repeatWindow = 5 * time.Second

// repeats collapses identical lines within a window into the first one and
// a count carried by the next one logged.
type repeats struct {
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	seen   map[string]*repeat
}

type repeat struct {
	at         time.Time // when the line was last logged
	suppressed int       // since then
}

// maxRepeatKeys bounds the map: SDK lines embed ids and addresses, so
// distinct lines never stop coming; forgetting them all now and then only
// lets one extra copy of a repeating line through.
const maxRepeatKeys = 256

func newRepeats(window time.Duration, now func() time.Time) *repeats {
	return &repeats{window: window, now: now, seen: map[string]*repeat{}}
}

// admit reports whether msg should be logged now and, if so, how many
// copies were held back since it was last logged.
func (r *repeats) admit(msg string) (ok bool, held int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if e := r.seen[msg]; e != nil {
		if now.Sub(e.at) < r.window {
			e.suppressed++
			return false, 0
		}
		held, e.at, e.suppressed = e.suppressed, now, 0
		return true, held
	}
	if len(r.seen) >= maxRepeatKeys {
		clear(r.seen)
	}
	r.seen[msg] = &repeat{at: now}
	return true, 0
}

// benign are SDK lines logged at warn or error for normal events: a config
// that does not exist yet, a snapshot file not written yet, our own Close.
var benign = []string{
	"file doesn't exist", "file not exist", "config data not exist",
	"client connection is closing", "isRunning:false",
	// The SDK's per-config query limit (5/s, process-wide); our listener
	// falls back to the pushed content and re-reads later.
	"ConfigQueryRequest is limited",
}

func (s sdkLogger) emit(lvl zerolog.Level, msg string) {
	if lvl >= zerolog.WarnLevel {
		for _, b := range benign {
			if strings.Contains(msg, b) {
				lvl = zerolog.DebugLevel
				break
			}
		}
	}
	if lvl >= zerolog.WarnLevel && s.rep != nil && s.log.GetLevel() <= lvl {
		ok, held := s.rep.admit(msg)
		if !ok {
			return
		}
		if held > 0 {
			s.log.WithLevel(lvl).Int("repeated", held).Msg(msg)
			return
		}
	}
	s.log.WithLevel(lvl).Msg(msg)
}

func (s sdkLogger) Info(args ...interface{})  { s.emit(zerolog.InfoLevel, fmt.Sprint(args...)) }
func (s sdkLogger) Warn(args ...interface{})  { s.emit(zerolog.WarnLevel, fmt.Sprint(args...)) }
func (s sdkLogger) Error(args ...interface{}) { s.emit(zerolog.ErrorLevel, fmt.Sprint(args...)) }
func (s sdkLogger) Debug(args ...interface{}) { s.emit(zerolog.DebugLevel, fmt.Sprint(args...)) }

func (s sdkLogger) Infof(f string, args ...interface{}) {
	s.emit(zerolog.InfoLevel, fmt.Sprintf(f, args...))
}
func (s sdkLogger) Warnf(f string, args ...interface{}) {
	s.emit(zerolog.WarnLevel, fmt.Sprintf(f, args...))
}
func (s sdkLogger) Errorf(f string, args ...interface{}) {
	s.emit(zerolog.ErrorLevel, fmt.Sprintf(f, args...))
}
func (s sdkLogger) Debugf(f string, args ...interface{}) {
	s.emit(zerolog.DebugLevel, fmt.Sprintf(f, args...))
}

// Close satisfies the SDK's Logger; zerolog needs no flush.
func (s sdkLogger) Close() error { return nil }
