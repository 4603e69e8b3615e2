package nacosreg

import (
	"fmt"

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

func (s sdkLogger) Info(args ...interface{})  { s.log.Info().Msg(fmt.Sprint(args...)) }
func (s sdkLogger) Warn(args ...interface{})  { s.log.Warn().Msg(fmt.Sprint(args...)) }
func (s sdkLogger) Error(args ...interface{}) { s.log.Error().Msg(fmt.Sprint(args...)) }
func (s sdkLogger) Debug(args ...interface{}) { s.log.Debug().Msg(fmt.Sprint(args...)) }

func (s sdkLogger) Infof(f string, args ...interface{})  { s.log.Info().Msgf(f, args...) }
func (s sdkLogger) Warnf(f string, args ...interface{})  { s.log.Warn().Msgf(f, args...) }
func (s sdkLogger) Errorf(f string, args ...interface{}) { s.log.Error().Msgf(f, args...) }
func (s sdkLogger) Debugf(f string, args ...interface{}) { s.log.Debug().Msgf(f, args...) }

// Close satisfies the SDK's Logger; zerolog needs no flush.
func (s sdkLogger) Close() error { return nil }
