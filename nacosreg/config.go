package nacosreg

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/vo"
)

// GetConfig reads a config from the server. A config that does not exist is
// ErrConfigNotFound (wrapped).
func (c *Client) GetConfig(dataID, group string) (string, error) {
	if c.isClosed() {
		return "", ErrClosed
	}
	c.cfgMu.Lock()
	content, err := c.config.GetConfig(vo.ConfigParam{DataId: dataID, Group: c.group(group)})
	c.cfgMu.Unlock()
	if err != nil {
		if isNotFound(err) {
			return "", fmt.Errorf("nacosreg: get config %s@%s: %w", dataID, c.group(group), ErrConfigNotFound)
		}
		return "", fmt.Errorf("nacosreg: get config %s@%s: %w", dataID, c.group(group), err)
	}
	if content == "" {
		// Some servers answer a missing config with empty content and no
		// error; an empty config cannot be published, so it is missing.
		return "", fmt.Errorf("nacosreg: get config %s@%s: %w", dataID, c.group(group), ErrConfigNotFound)
	}
	return content, nil
}

// isNotFound recognises the SDK's rendering of Nacos's "config not found"
// answer (error code 300), which it does not expose as a type.
func isNotFound(err error) bool {
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "not exist") || strings.Contains(m, "not found") || strings.Contains(m, "config data not")
}

// PublishConfig writes a config (for tools and tests; operators use the
// console). contentType is e.g. "yaml".
func (c *Client) PublishConfig(dataID, group, content, contentType string) error {
	if c.isClosed() {
		return ErrClosed
	}
	c.cfgMu.Lock()
	ok, err := c.config.PublishConfig(vo.ConfigParam{DataId: dataID, Group: c.group(group), Content: content, Type: contentType})
	c.cfgMu.Unlock()
	if err == nil && !ok {
		err = fmt.Errorf("server answered false")
	}
	if err != nil {
		return fmt.Errorf("nacosreg: publish config %s@%s: %w", dataID, c.group(group), err)
	}
	return nil
}

// DeleteConfig removes a config.
func (c *Client) DeleteConfig(dataID, group string) error {
	if c.isClosed() {
		return ErrClosed
	}
	c.cfgMu.Lock()
	ok, err := c.config.DeleteConfig(vo.ConfigParam{DataId: dataID, Group: c.group(group)})
	c.cfgMu.Unlock()
	if err == nil && !ok {
		err = fmt.Errorf("server answered false")
	}
	if err != nil {
		return fmt.Errorf("nacosreg: delete config %s@%s: %w", dataID, c.group(group), err)
	}
	return nil
}

// listener serialises config deliveries. The SDK runs OnChange on a new
// goroutine per change, so two quick changes can arrive in either order;
// the listener therefore treats OnChange as a wake-up, re-reads the config
// from the server on its one goroutine and delivers only a content whose MD5
// differs from the last one delivered. The newest state always wins and no
// older content is ever delivered after a newer one.
type listener struct {
	c      *Client
	dataID string
	group  string
	param  vo.ConfigParam

	// guarded by mu
	mu       sync.Mutex
	arrived  string // content of the last OnChange to run, used when the server cannot be read
	lastMD5  string // of the last delivery; "deleted" marks a delivered deletion
	wake     chan struct{}
	done     chan struct{}
	finished chan struct{}
	stopOnce sync.Once
}

const deletedMark = "deleted"

// listenRegistrationWindow covers the SDK's listen cycle (5 s) plus a margin.
const listenRegistrationWindow = 6 * time.Second

// Listen delivers the config's current state first (content, or Deleted),
// then every change, serialised and deduplicated by MD5. fn runs on a
// goroutine owned by the Listener. The SDK allows one listener per
// dataID+group per client.
func (c *Client) Listen(dataID, group string, fn func(ConfigEvent)) (Listener, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	l := &listener{
		c: c, dataID: dataID, group: c.group(group),
		wake: make(chan struct{}, 1), done: make(chan struct{}), finished: make(chan struct{}),
	}
	c.listeners[l] = struct{}{}
	c.mu.Unlock()

	l.param = vo.ConfigParam{DataId: dataID, Group: l.group, OnChange: l.onChange}
	// Listen before the first read so a change in between is not missed; the
	// MD5 check drops the double delivery this can cause.
	c.cfgMu.Lock()
	err := c.config.ListenConfig(l.param)
	c.cfgMu.Unlock()
	if err != nil {
		l.forget()
		return nil, fmt.Errorf("nacosreg: listen config %s@%s: %w", dataID, l.group, err)
	}
	l.wake <- struct{}{}
	go l.loop(fn)
	return l, nil
}

func (l *listener) onChange(_, _, _, data string) {
	l.mu.Lock()
	l.arrived = data
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *listener) loop(fn func(ConfigEvent)) {
	defer close(l.finished)
	backoff := 200 * time.Millisecond
	// The SDK registers a new listener with the server only on its next
	// listen cycle (up to 5 s later); until then no change is pushed. Re-read
	// every second during that window, then every ConfigResync.
	fastUntil := time.Now().Add(listenRegistrationWindow)
	next := func() time.Duration {
		if time.Now().Before(fastUntil) {
			return time.Second
		}
		return l.c.opts.ConfigResync
	}
	resync := time.NewTimer(next())
	defer resync.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-l.wake:
		case <-resync.C:
			if d := next(); d > 0 {
				resync.Reset(d)
			}
		}
		ev, err := l.read()
		if err != nil {
			// The server could not be read: fall back to what the SDK handed
			// over last, and schedule a re-read so a stale order is repaired.
			l.c.log.Warn().Err(err).Str("dataId", l.dataID).Msg("config re-read failed; using pushed content")
			l.mu.Lock()
			ev = event(l.dataID, l.group, l.arrived)
			l.mu.Unlock()
			time.AfterFunc(backoff, func() {
				select {
				case l.wake <- struct{}{}:
				default:
				}
			})
			if backoff < 5*time.Second {
				backoff *= 2
			}
		} else {
			backoff = 200 * time.Millisecond
		}
		key := ev.MD5
		if ev.Deleted {
			key = deletedMark
		}
		l.mu.Lock()
		dup := key == l.lastMD5
		l.lastMD5 = key
		l.mu.Unlock()
		if !dup {
			fn(ev)
		}
	}
}

func (l *listener) read() (ConfigEvent, error) {
	content, err := l.c.GetConfig(l.dataID, l.group)
	if err != nil {
		if isNotFoundErr(err) {
			return event(l.dataID, l.group, ""), nil
		}
		return ConfigEvent{}, err
	}
	return event(l.dataID, l.group, content), nil
}

func isNotFoundErr(err error) bool { return err != nil && errors.Is(err, ErrConfigNotFound) }

func event(dataID, group, content string) ConfigEvent {
	if content == "" {
		return ConfigEvent{DataID: dataID, Group: group, Deleted: true}
	}
	return ConfigEvent{DataID: dataID, Group: group, Content: content, MD5: MD5(content)}
}

// MD5 returns the hex MD5 of s, as Nacos computes a config's md5.
func MD5(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// Stop cancels the listener and waits for its goroutine. Idempotent.
func (l *listener) Stop() {
	l.stopOnce.Do(func() {
		l.c.cfgMu.Lock()
		err := l.c.config.CancelListenConfig(vo.ConfigParam{DataId: l.dataID, Group: l.group})
		l.c.cfgMu.Unlock()
		if err != nil {
			l.c.log.Warn().Err(err).Str("dataId", l.dataID).Msg("cancel listen failed")
		}
		close(l.done)
		<-l.finished
		l.forget()
	})
}

func (l *listener) forget() {
	l.c.mu.Lock()
	delete(l.c.listeners, l)
	l.c.mu.Unlock()
}
