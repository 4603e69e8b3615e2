package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/bridge/metrics"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/inferencecfg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/shutdown"
)

// DefaultMaxBodyBytes is Options.MaxBodyBytes when zero. 4 MiB holds a chat
// request with a long context many times over; larger bodies (inline images,
// huge prompts) are forwarded unread rather than held in memory.
const DefaultMaxBodyBytes = 4 << 20

// DefaultApplyPaths are the OpenAI-compatible endpoints whose bodies carry
// temperature, top_p and max_tokens.
var DefaultApplyPaths = []string{"/v1/chat/completions", "/v1/completions"}

// Options configure a Proxy. Backend is required; every other field has a
// useful zero value.
type Options struct {
	// Backend is the inference server, e.g. http://127.0.0.1:8000. A path
	// in it is prefixed to every request path.
	Backend *url.URL
	// Config returns the inference config in force (the bridge's Config,
	// lock-free). Nil, or a func returning nil, turns body rewriting off.
	Config func() *inferencecfg.Config
	// Tracker, when set, counts every request until its response is done
	// and answers 503 with Retry-After after Tracker.Refuse.
	Tracker *shutdown.Tracker
	// Transport sends requests to the backend. Nil means a clone of
	// http.DefaultTransport with a keep-alive pool sized for a proxy and
	// compression off (see newTransport).
	Transport http.RoundTripper
	// Logger gets backend failures (sampled) and ReverseProxy's own
	// messages. The zero Logger discards.
	Logger zerolog.Logger
	// MaxBodyBytes bounds the request bodies read for rewriting; larger
	// ones are forwarded untouched. Zero means DefaultMaxBodyBytes; negative
	// turns rewriting off.
	MaxBodyBytes int64
	// ApplyPaths are the request paths (exact match) whose POST JSON bodies
	// get the inference config. Nil means DefaultApplyPaths.
	ApplyPaths []string
}

// Proxy is an http.Handler that forwards every request to one backend. It
// is safe for concurrent use; see the package documentation.
type Proxy struct {
	// immutable after New
	handler    http.Handler // Tracker middleware (if any) around serve
	rp         *httputil.ReverseProxy
	config     func() *inferencecfg.Config
	tracker    *shutdown.Tracker
	maxBody    int64
	applyPaths map[string]struct{}
	log        zerolog.Logger // sampled, for per-request failures

	// atomic
	inFlight  atomic.Int64
	received  atomic.Uint64 // before the Tracker; received - requests = refused
	requests  atomic.Uint64
	failures  atomic.Uint64
	canceled  atomic.Uint64
	rewritten atomic.Uint64
	clamped   atomic.Uint64
	malformed atomic.Uint64
	oversized atomic.Uint64
	latency   latencyRing
	// Full-duration histograms, split because a token stream lasts seconds
	// and a unary call milliseconds: one histogram would hide both.
	unaryHist, streamHist *metrics.Histogram
}

var _ http.Handler = (*Proxy)(nil)

// New returns a Proxy for o. It fails only when o.Backend is missing or is
// not an absolute http(s) URL.
func New(o Options) (*Proxy, error) {
	if o.Backend == nil {
		return nil, errors.New("proxy: Options.Backend is required")
	}
	if (o.Backend.Scheme != "http" && o.Backend.Scheme != "https") || o.Backend.Host == "" {
		return nil, fmt.Errorf("proxy: backend %q: want an absolute http or https URL", o.Backend)
	}
	p := &Proxy{
		config:     o.Config,
		tracker:    o.Tracker,
		maxBody:    o.MaxBodyBytes,
		applyPaths: map[string]struct{}{},
		// A dead backend fails every request; a few lines a second say so
		// without flooding the log.
		log:        o.Logger.Sample(&zerolog.BurstSampler{Burst: 5, Period: time.Second}),
		unaryHist:  metrics.NewHistogram(nil),
		streamHist: metrics.NewHistogram(nil),
	}
	if p.maxBody == 0 {
		p.maxBody = DefaultMaxBodyBytes
	}
	paths := o.ApplyPaths
	if paths == nil {
		paths = DefaultApplyPaths
	}
	for _, s := range paths {
		p.applyPaths[s] = struct{}{}
	}
	transport := o.Transport
	if transport == nil {
		transport = newTransport()
	}
	backend := *o.Backend // our copy: the caller may reuse theirs
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&backend)
			// The backend sees its own host name in Host (what vLLM,
			// SGLang and friends expect) and the caller's in
			// X-Forwarded-Host. The sidecar is an internal hop, not a trust
			// boundary, so an incoming X-Forwarded-For chain is kept and
			// extended rather than dropped.
			if xff := pr.In.Header["X-Forwarded-For"]; xff != nil {
				pr.Out.Header["X-Forwarded-For"] = xff
			}
			pr.SetXForwarded()
		},
		Transport: transport,
		// Zero on purpose. ReverseProxy documents that it ignores
		// FlushInterval and flushes after every write for streaming
		// responses: text/event-stream, and any response without a
		// Content-Length (chunked NDJSON, as Ollama streams). That is every
		// token stream an inference server sends, and TestStreamsNotBuffered
		// holds it to that. -1 would add nothing for those, and for a
		// fixed-length answer it would cost a timer and an extra flush per
		// request.
		FlushInterval: 0,
		ErrorHandler:  p.backendError,
		// Without a pool ReverseProxy allocates (and zeroes) a 32 KiB copy
		// buffer per request, which was the largest allocation on the
		// proxied path.
		BufferPool: bufferPool{},
		ErrorLog:   log.New(o.Logger, "proxy: ", 0),
	}
	var h http.Handler = http.HandlerFunc(p.serve)
	if p.tracker != nil {
		h = p.tracker.Middleware(h)
	}
	p.handler = h
	return p, nil
}

// newTransport is http.DefaultTransport tuned for a proxy that talks to one
// backend: the default keeps only 2 idle connections per host, so under
// concurrent load most requests would dial a fresh connection (and leave one
// in TIME_WAIT); and it would ask for gzip and decompress on the caller's
// behalf, changing the response the caller sees. No response timeout: the
// first token of a long prompt may take minutes, and the caller's context
// ends the request.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	t.DisableCompression = true
	return t
}

// ServeHTTP forwards r to the backend.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.received.Add(1)
	p.handler.ServeHTTP(w, r)
}

// serve runs once the request was admitted. Latency and in-flight count
// cover everything up to the last byte of the response: ReverseProxy.ServeHTTP
// returns only after copying the whole body, streams included.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p.requests.Add(1)
	p.inFlight.Add(1)
	defer func() {
		p.inFlight.Add(-1)
		d := time.Since(start)
		p.latency.record(d)
		if isStream(w.Header().Get("Content-Type")) {
			p.streamHist.Observe(d)
		} else {
			p.unaryHist.Observe(d)
		}
		if v := recover(); v != nil {
			// ReverseProxy panics with http.ErrAbortHandler when the
			// response breaks mid-body (the server then drops the
			// connection quietly). Count it, then let it go on.
			if v == http.ErrAbortHandler {
				p.countCut(r)
			}
			panic(v)
		}
	}()
	if p.shouldRewrite(r) {
		if err := p.rewrite(r); err != nil {
			p.canceled.Add(1)
			writeError(w, http.StatusBadRequest, "invalid_request_error", "reading request body: "+err.Error())
			return
		}
	}
	p.rp.ServeHTTP(w, r)
}

// countCut attributes a broken request to the client when it went away,
// to the backend otherwise.
func (p *Proxy) countCut(r *http.Request) {
	if r.Context().Err() != nil {
		p.canceled.Add(1)
	} else {
		p.failures.Add(1)
	}
}

// backendError is ReverseProxy's ErrorHandler: the backend could not be
// reached or did not answer. It runs before any byte of the response was
// written, so the caller gets a 502 with an OpenAI-style error body, which
// SDKs surface as a readable message.
func (p *Proxy) backendError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		// The caller left; nobody reads this answer and the backend is
		// not to blame.
		p.canceled.Add(1)
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	p.failures.Add(1)
	p.log.Warn().Err(err).Str("method", r.Method).Str("path", r.URL.Path).Msg("proxy: backend request failed")
	writeError(w, http.StatusBadGateway, "backend_unavailable", "inference backend unavailable")
}

// writeError writes {"error":{"message":..,"type":..,"code":..}}, the
// shape OpenAI-compatible clients parse.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	body := fmt.Appendf(nil, `{"error":{"message":%s,"type":%q,"code":%d}}`+"\n",
		strconv.Quote(msg), typ, status)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// shouldRewrite reports whether r is a request the inference config
// applies to: a POST of (what claims to be) JSON, uncompressed, to one of
// the apply paths, with a config in force. It does not read the body.
func (p *Proxy) shouldRewrite(r *http.Request) bool {
	if p.config == nil || p.maxBody < 0 || r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return false
	}
	if _, ok := p.applyPaths[r.URL.Path]; !ok {
		return false
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return false
	}
	return isJSON(r.Header.Get("Content-Type"))
}

// isJSON accepts application/json, any +json type, and no Content-Type at
// all (curl --data-binary without -H, which servers like vLLM still parse
// as JSON). Other types pass through unread.
func isJSON(ct string) bool {
	if ct == "" {
		return true
	}
	ct, _, _ = strings.Cut(ct, ";")
	ct = strings.TrimSpace(ct)
	return strings.EqualFold(ct, "application/json") ||
		(len(ct) > 5 && strings.EqualFold(ct[len(ct)-5:], "+json"))
}

// isStream reports whether a response Content-Type is a token stream:
// server-sent events (OpenAI-compatible servers) or NDJSON (Ollama).
func isStream(ct string) bool {
	ct, _, _ = strings.Cut(ct, ";")
	ct = strings.TrimSpace(ct)
	return strings.EqualFold(ct, "text/event-stream") || strings.EqualFold(ct, "application/x-ndjson")
}

// rewrite replaces r.Body with the config applied. Bodies over maxBody are
// left as they are, unread beyond the limit. An error means the body could
// not be read (the client went away); r must then be answered here.
func (p *Proxy) rewrite(r *http.Request) error {
	if r.ContentLength > p.maxBody {
		p.oversized.Add(1)
		return nil
	}
	cfg := p.config()
	if cfg == nil {
		return nil
	}
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		// Chunked: read one byte past the limit to know it is over.
		body, err = io.ReadAll(io.LimitReader(r.Body, p.maxBody+1))
		if err == nil && int64(len(body)) > p.maxBody {
			p.oversized.Add(1)
			r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			return nil
		}
	}
	if err != nil {
		return err
	}
	out, what := rewriteBody(body, cfg)
	switch what {
	case malformed:
		p.malformed.Add(1)
	case clamped:
		p.clamped.Add(1)
		p.rewritten.Add(1)
	case filled:
		p.rewritten.Add(1)
	}
	setBody(r, out)
	return nil
}

// setBody replaces r's body with b, fixing the length. Content-Length the
// header is what the caller sent; the transport writes r.ContentLength, but
// the header is kept in step for anything that looks at it. GetBody lets the
// transport resend the body on a stale keep-alive connection.
func setBody(r *http.Request, b []byte) {
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.ContentLength = int64(len(b))
	r.TransferEncoding = nil
	r.Header.Set("Content-Length", strconv.Itoa(len(b)))
}

// bufferPool recycles ReverseProxy's response copy buffers. The pool holds
// *[]byte so that Put does not allocate a slice header each time.
type bufferPool struct{}

const copyBufferSize = 32 << 10 // ReverseProxy's own default

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

func (bufferPool) Get() []byte { return *copyBuffers.Get().(*[]byte) }

func (bufferPool) Put(b []byte) {
	if cap(b) == copyBufferSize {
		b = b[:copyBufferSize]
		copyBuffers.Put(&b)
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

// Stats returns the counters and recent latency. It takes no lock; the
// latency percentiles copy and sort LatencyWindow samples.
func (p *Proxy) Stats() Snapshot {
	s := p.counters()
	s.LatencyP50, s.LatencyP95, s.LatencySamples = p.latency.percentiles()
	return s
}

// counters is Stats without the latency percentiles, for callers (the
// metrics) that do not need the copy and sort.
func (p *Proxy) counters() Snapshot {
	s := Snapshot{
		InFlight:  p.inFlight.Load(),
		Requests:  p.requests.Load(),
		Failures:  p.failures.Load(),
		Canceled:  p.canceled.Load(),
		Rewritten: p.rewritten.Load(),
		Clamped:   p.clamped.Load(),
		Malformed: p.malformed.Load(),
		Oversized: p.oversized.Load(),
	}
	// requests was read first and only grows after received did, so the
	// difference is never negative; it can over-count by the requests
	// passing through Tracker.Begin at this instant.
	s.Refused = p.received.Load() - s.Requests
	return s
}

// InFlight returns the number of requests being served now, for the
// metadata's inflight key and drain reports.
func (p *Proxy) InFlight() int64 { return p.inFlight.Load() }

// CloseIdleConnections closes the idle keep-alive connections to the
// backend, and with them the transport's goroutines that watch them. Call it
// when the proxy is retired; it is idempotent, and a later request simply
// dials again. It does nothing for a Transport without the method.
func (p *Proxy) CloseIdleConnections() {
	if t, ok := p.rp.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}
