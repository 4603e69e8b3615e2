package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/shutdown"
)

// seen is what the echo backend received.
type seen struct {
	method, path, host, xfh, xff string
	contentLength                int64
	body                         []byte
}

// echoBackend records each request and answers {"ok":true}.
func echoBackend(t *testing.T) (*httptest.Server, func() seen) {
	t.Helper()
	var mu sync.Mutex
	var last seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = seen{r.Method, r.URL.Path, r.Host, r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-For"), r.ContentLength, b}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() seen { mu.Lock(); defer mu.Unlock(); return last }
}

// front starts the proxy for backend behind an httptest server and returns
// its URL and a client; both are cleaned up with the test.
func front(t *testing.T, o Options) (*Proxy, string, *http.Client) {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		srv.Close()
		p.CloseIdleConnections()
	})
	return p, srv.URL, client
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func TestNewValidates(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8000", "ftp://x", "http://"} {
		o := Options{}
		if u != "" {
			o.Backend, _ = url.Parse(u)
		}
		if _, err := New(o); err == nil || !strings.HasPrefix(err.Error(), "proxy: ") {
			t.Errorf("backend %q: err = %v", u, err)
		}
	}
}

func TestForwarding(t *testing.T) {
	cfg := testConfig()
	backend, last := echoBackend(t)
	p, base, client := front(t, Options{
		Backend:      mustURL(t, backend.URL),
		Config:       func() *inferencecfg.Config { return cfg },
		MaxBodyBytes: 256,
	})
	big := `{"model":"m","prompt":"` + strings.Repeat("x", 300) + `"}`

	tests := []struct {
		name, method, path, ctype, body string
		chunked                         bool
		want                            string // what the backend gets; "" means body unchanged
	}{
		{name: "chat completion rewritten", method: "POST", path: "/v1/chat/completions", ctype: "application/json",
			body: `{"model":"big","messages":[]}`, want: `{"model":"big","messages":[],"temperature":0.2,"top_p":0.9,"max_tokens":4096}`},
		{name: "completion clamped, chunked upload", method: "POST", path: "/v1/completions", ctype: "application/json; charset=utf-8", chunked: true,
			body: `{"model":"m","prompt":"x","max_tokens":99999,"temperature":1,"top_p":1}`, want: `{"model":"m","prompt":"x","max_tokens":512,"temperature":1,"top_p":1}`},
		{name: "no content type is taken as JSON", method: "POST", path: "/v1/completions",
			body: `{"temperature":1,"top_p":1}`, want: `{"temperature":1,"top_p":1,"max_tokens":512}`},
		{name: "malformed JSON passes through", method: "POST", path: "/v1/chat/completions", ctype: "application/json", body: `{"model":`},
		{name: "non-JSON passes through", method: "POST", path: "/v1/chat/completions", ctype: "text/plain", body: `{"model":"m"}`},
		{name: "GET passes through", method: "GET", path: "/v1/models"},
		{name: "other path passes through", method: "POST", path: "/v1/embeddings", ctype: "application/json", body: `{"model":"m","input":"x"}`},
		{name: "oversized body passes through", method: "POST", path: "/v1/completions", ctype: "application/json", body: big},
		{name: "oversized chunked body passes through", method: "POST", path: "/v1/completions", ctype: "application/json", body: big, chunked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
				if tt.chunked {
					body = io.MultiReader(body) // hides the length: sent chunked
				}
			}
			req, _ := http.NewRequest(tt.method, base+tt.path, body)
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			res, got := do(t, client, req)
			if res.StatusCode != 200 || got != `{"ok":true}` {
				t.Fatalf("response %d %q", res.StatusCode, got)
			}
			s := last()
			want := tt.want
			if want == "" {
				want = tt.body
			}
			if s.method != tt.method || s.path != tt.path || string(s.body) != want {
				t.Fatalf("backend got %s %s %s\nwant body %s", s.method, s.path, s.body, want)
			}
			if tt.want != "" && s.contentLength != int64(len(tt.want)) {
				t.Errorf("backend Content-Length %d, want %d", s.contentLength, len(tt.want))
			}
			if bu := mustURL(t, backend.URL); s.host != bu.Host || s.xfh != mustURL(t, base).Host || s.xff != "127.0.0.1" {
				t.Errorf("host %q X-Forwarded-Host %q X-Forwarded-For %q", s.host, s.xfh, s.xff)
			}
		})
	}
	st := p.Stats()
	if st.Requests != uint64(len(tests)) || st.Rewritten != 3 || st.Clamped != 1 || st.Malformed != 1 || st.Oversized != 2 ||
		st.Failures != 0 || st.Refused != 0 || st.InFlight != 0 || st.LatencySamples != len(tests) || st.LatencyP50 <= 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestNoConfigNoRewrite(t *testing.T) {
	backend, last := echoBackend(t)
	for name, cf := range map[string]func() *inferencecfg.Config{
		"nil func":   nil,
		"nil config": func() *inferencecfg.Config { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			_, base, client := front(t, Options{Backend: mustURL(t, backend.URL), Config: cf})
			in := `{"model":"m"}`
			req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(in))
			do(t, client, req)
			if got := string(last().body); got != in {
				t.Fatalf("backend got %s", got)
			}
		})
	}
}

func TestXForwardedForChainKept(t *testing.T) {
	backend, last := echoBackend(t)
	_, base, client := front(t, Options{Backend: mustURL(t, backend.URL)})
	req, _ := http.NewRequest("GET", base+"/health", nil)
	req.Header.Set("X-Forwarded-For", "10.0.0.1")
	do(t, client, req)
	if got := last().xff; got != "10.0.0.1, 127.0.0.1" {
		t.Fatalf("X-Forwarded-For %q", got)
	}
}

// sseBackend writes one event, waits for next (or gap), writes another.
func sseBackend(t *testing.T, gap time.Duration, next <-chan struct{}) *httptest.Server {
	return streamBackend(t, "text/event-stream", gap, next)
}

func streamBackend(t *testing.T, ctype string, gap time.Duration, next <-chan struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		_, _ = io.WriteString(w, "data: {\"token\":\"one\"}\n\n")
		w.(http.Flusher).Flush()
		if next != nil {
			<-next
		} else {
			time.Sleep(gap)
		}
		_, _ = io.WriteString(w, "data: {\"token\":\"two\"}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// readEvents returns the time each "data:" line arrived, from start.
func readEvents(t *testing.T, res *http.Response, start time.Time, first chan<- struct{}) []time.Duration {
	t.Helper()
	defer res.Body.Close()
	var at []time.Duration
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") {
			at = append(at, time.Since(start))
			if len(at) == 1 && first != nil {
				close(first)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Error(err)
	}
	return at
}

// TestStreamsNotBuffered proves the proxy does not hold a stream back: the
// first event must arrive well before the backend writes the second, 300 ms
// later. Both kinds of token stream are covered: SSE, and a chunked body of
// another type (NDJSON, as Ollama streams).
func TestStreamsNotBuffered(t *testing.T) {
	const gap = 300 * time.Millisecond
	for _, ctype := range []string{"text/event-stream", "text/event-stream; charset=utf-8", "application/x-ndjson"} {
		t.Run(ctype, func(t *testing.T) {
			backend := streamBackend(t, ctype, gap, nil)
			p, base, client := front(t, Options{Backend: mustURL(t, backend.URL), Config: func() *inferencecfg.Config { return testConfig() }})

			start := time.Now()
			req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true}`))
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			at := readEvents(t, res, start, nil)
			if len(at) != 3 {
				t.Fatalf("got %d events", len(at))
			}
			if at[0] > gap/2 || at[1]-at[0] < gap*2/3 {
				t.Fatalf("first event at %v, second at %v: the stream was buffered", at[0], at[1])
			}
			if st := p.Stats(); st.LatencyP50 < gap {
				t.Errorf("latency %v does not cover the whole stream", st.LatencyP50)
			}
		})
	}
}

// TestDrain: after Refuse, a new request gets 503 + Retry-After while the
// stream already in flight runs to its end.
func TestDrain(t *testing.T) {
	release := make(chan struct{})
	backend := sseBackend(t, 0, release)
	tracker := &shutdown.Tracker{RetryAfter: 2 * time.Second}
	p, base, client := front(t, Options{Backend: mustURL(t, backend.URL), Tracker: tracker})

	firstEvent := make(chan struct{})
	done := make(chan []time.Duration)
	go func() {
		req, _ := http.NewRequest("GET", base+"/v1/stream", nil)
		res, err := client.Do(req)
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		done <- readEvents(t, res, time.Now(), firstEvent)
	}()
	<-firstEvent
	if n := tracker.InFlight(); n != 1 {
		t.Fatalf("tracker in flight %d", n)
	}
	if n := p.InFlight(); n != 1 {
		t.Fatalf("proxy in flight %d", n)
	}

	tracker.Refuse()
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	res, _ := do(t, client, req)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "2" {
		t.Fatalf("during drain: %d Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}

	close(release)
	if at := <-done; len(at) != 3 {
		t.Fatalf("in-flight stream got %d events, want 3", len(at))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tracker.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Refused != 1 || st.Requests != 1 || st.InFlight != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestBackendDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	p, base, client := front(t, Options{Backend: mustURL(t, "http://"+addr)})

	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	res, body := do(t, client, req)
	if res.StatusCode != http.StatusBadGateway || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var e struct {
		Error struct {
			Message, Type string
			Code          int
		}
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != 502 || e.Error.Type != "backend_unavailable" {
		t.Fatalf("body %q: %v", body, err)
	}
	if st := p.Stats(); st.Failures != 1 || st.Canceled != 0 || st.Requests != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestStreamCutByBackend: a backend that dies mid-stream is a failure, and
// the caller sees a broken response rather than a clean end.
func TestStreamCutByBackend(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drops the connection mid-stream
	}))
	t.Cleanup(backend.Close)
	p, base, client := front(t, Options{Backend: mustURL(t, backend.URL)})
	res, err := client.Get(base + "/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(res.Body)
	res.Body.Close()
	if err == nil {
		t.Error("cut stream read without error")
	}
	if st := p.Stats(); st.Failures != 1 || st.InFlight != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestClientGone: a caller that leaves mid-stream is counted as canceled,
// not as a backend failure.
func TestClientGone(t *testing.T) {
	release := make(chan struct{})
	backend := sseBackend(t, 0, release)
	defer close(release)
	p, base, client := front(t, Options{Backend: mustURL(t, backend.URL)})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/stream", nil)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(res.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	res.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for p.InFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := p.Stats(); st.Canceled != 1 || st.Failures != 0 || st.InFlight != 0 {
		t.Errorf("stats %+v", st)
	}
}
