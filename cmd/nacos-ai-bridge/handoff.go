package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
)

// handoff gives each applied inference config to a backend that reads its
// own: written atomically to a file and/or POSTed as JSON to a reload URL.
//
// It runs on its own goroutine because the config store calls subscribers
// under its lock: a slow or dead reload endpoint must not stall the health
// cycle or the admin endpoint. Offers are latest-wins: while a POST is being
// retried, a newer config replaces it, so the backend never gets an old
// config after a new one.
type handoff struct {
	url, file           string
	client              *http.Client
	log                 zerolog.Logger
	backoff, maxBackoff time.Duration

	next chan *inferencecfg.Config // one slot: the newest config not yet handed off
	// ctx ends with close; it also aborts a POST in progress.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func newHandoff(url, file string, log zerolog.Logger) *handoff {
	ctx, cancel := context.WithCancel(context.Background())
	return &handoff{url: url, file: file, client: &http.Client{Timeout: 5 * time.Second}, log: log,
		backoff: time.Second, maxBackoff: 30 * time.Second,
		next: make(chan *inferencecfg.Config, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// start runs the hand-off goroutine; close stops it.
func (h *handoff) start() { go h.run() }

// offer queues cfg, replacing one not yet handed off. It never blocks.
func (h *handoff) offer(cfg *inferencecfg.Config) {
	for {
		select {
		case h.next <- cfg:
			return
		default:
		}
		select {
		case <-h.next: // drop the older one
		default:
		}
	}
}

// close stops the goroutine, abandoning a POST being retried, and waits.
// It is idempotent.
func (h *handoff) close() {
	h.cancel()
	<-h.done
}

func (h *handoff) run() {
	defer close(h.done)
	for {
		select {
		case <-h.ctx.Done():
			return
		case cfg := <-h.next:
			h.deliver(cfg)
		}
	}
}

// deliver writes the file, then POSTs with back-off until the backend takes
// it, a newer config arrives (it is requeued and wins) or close is called.
func (h *handoff) deliver(cfg *inferencecfg.Config) {
	body, err := json.Marshal(struct {
		Rev string `json:"rev"`
		*inferencecfg.Config
	}{cfg.Rev, cfg})
	if err != nil {
		h.log.Error().Err(err).Msg("inference config not encodable for the backend")
		return
	}
	if h.file != "" {
		if err := writeFileAtomic(h.file, body); err != nil {
			h.log.Warn().Err(err).Str("file", h.file).Str("rev", cfg.Rev).Msg("inference config file not written")
		} else {
			h.log.Info().Str("file", h.file).Str("rev", cfg.Rev).Msg("inference config written for the backend")
		}
	}
	if h.url == "" {
		return
	}
	wait := h.backoff
	for attempt := 1; ; attempt++ {
		err := h.post(body)
		if err == nil {
			h.log.Info().Str("rev", cfg.Rev).Int("attempt", attempt).Msg("backend reload hook took the inference config")
			return
		}
		if attempt == 1 || attempt%10 == 0 {
			h.log.Warn().Err(err).Str("rev", cfg.Rev).Int("attempt", attempt).Dur("retry_in", wait).Msg("backend reload hook failed; retrying")
		}
		t := time.NewTimer(wait)
		select {
		case <-h.ctx.Done():
			t.Stop()
			return
		case newer := <-h.next:
			t.Stop()
			h.offer(newer) // run picks it up next
			return
		case <-t.C:
		}
		wait = min(2*wait, h.maxBackoff)
	}
}

func (h *handoff) post(body []byte) error {
	req, err := http.NewRequestWithContext(h.ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", h.url, resp.Status)
	}
	return nil
}

// writeFileAtomic replaces name with data so that a reader sees the old
// content or the new, never a half-written file.
func writeFileAtomic(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
