package nacosreg

import (
	"fmt"
	"strings"

	"github.com/nacos-group/nacos-sdk-go/v2/common/logger"
	"github.com/rs/zerolog"
)

// sdkLogger routes the SDK's log lines into zerolog. The SDK keeps one
// process-wide logger; installing ours before a client is built also stops
// the SDK from opening its own log file.
type sdkLogger struct{ log zerolog.Logger }

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
	return sdkLogger{log: l}
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
