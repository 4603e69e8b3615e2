package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// maxBody bounds what one response may bring; a vLLM exposition with many
// models and histograms is well under 1 MiB.
const maxBody = 8 << 20

// acceptText asks for the Prometheus text format: exporters that can also
// speak protobuf or OpenMetrics then answer in the one format we parse.
const acceptText = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// adapter implements Adapter for every engine; what differs is its spec.
type adapter struct {
	// immutable after New
	engine                                     string
	spec                                       spec
	client                                     *http.Client
	healthURL, modelsURL, metricsURL, slotsURL string
	inFlight                                   func() int64
	staleAfter                                 int

	mu sync.Mutex // serialises Poll; guards the fields below
	// models is the last good model list (nil: never read).
	models []string
	// last is the last good load; haveLast says it exists; age counts the
	// polls since it was read.
	last     load
	haveLast bool
	age      int
}

var _ Adapter = (*adapter)(nil)

// Engine implements Adapter.
func (a *adapter) Engine() string { return a.engine }

// Poll implements Adapter: health first; models and load only when the
// engine answers.
func (a *adapter) Poll(ctx context.Context) Status {
	a.mu.Lock()
	defer a.mu.Unlock()

	st := Status{QueueDepth: Unknown, Running: Unknown, KVCacheUsage: Unknown}
	var errs []error

	// Health. Engine "openai" has no health route: its model list answers
	// for it, and is then parsed from the same response.
	var modelsBody []byte
	modelsFetched := false
	if a.healthURL != "" {
		code, _, err := a.do(ctx, http.MethodGet, a.healthURL, "", "")
		var herr error
		st.Live, st.Ready, herr = a.classify(http.MethodGet, a.healthURL, code, err)
		if herr != nil {
			errs = append(errs, fmt.Errorf("health: %w", herr))
		}
	} else {
		code, body, err := a.do(ctx, a.modelsMethod(), a.modelsURL, a.spec.modelsBody, "application/json")
		var herr error
		st.Live, st.Ready, herr = a.classify(a.modelsMethod(), a.modelsURL, code, err)
		if herr != nil {
			errs = append(errs, fmt.Errorf("health: %w", herr))
		}
		modelsFetched = true
		if st.Ready {
			modelsBody = body
		}
	}

	// A dead engine has no models or load to read; asking would only wait
	// out the deadline twice more. The last good values age as usual.
	if st.Live {
		if err := a.pollModels(ctx, &st, modelsFetched, modelsBody); err != nil {
			errs = append(errs, fmt.Errorf("models: %w", err))
		}
	} else {
		a.carryModels(&st)
	}

	l, fresh, err := a.readLoad(ctx, st.Live)
	if err != nil {
		errs = append(errs, fmt.Errorf("metrics: %w", err))
	}
	a.applyLoad(&st, l, fresh)

	st.Err = errors.Join(errs...)
	return st
}

// classify maps a health answer to (live, ready). No answer: not live. 2xx:
// ready. The engine's "not ready yet" codes: live, not ready, and no error,
// because loading is a state the bridge publishes, not a fault of the poll.
// Anything else: the engine says it is broken (vLLM answers 500 once its
// engine core died), so not live.
func (a *adapter) classify(method, url string, code int, err error) (live, ready bool, _ error) {
	switch {
	case err != nil:
		return false, false, err
	case code/100 == 2:
		return true, true, nil
	case a.spec.notReady != nil && a.spec.notReady(code):
		return true, false, nil
	default:
		return false, false, &StatusError{Method: method, URL: url, Code: code}
	}
}

func (a *adapter) modelsMethod() string {
	if a.spec.modelsMethod != "" {
		return a.spec.modelsMethod
	}
	return http.MethodGet
}

// pollModels reads the model list (or parses the body the health check
// already fetched); on failure the last good list is kept.
func (a *adapter) pollModels(ctx context.Context, st *Status, fetched bool, body []byte) error {
	if a.modelsURL == "" {
		return nil
	}
	if fetched && body == nil {
		// The health check was the model request and said "not ready":
		// nothing new to parse, and nothing wrong with the poll.
		a.carryModels(st)
		return nil
	}
	if !fetched {
		var err error
		if body, err = a.doOK(ctx, a.modelsMethod(), a.modelsURL, a.spec.modelsBody, "application/json"); err != nil {
			a.carryModels(st)
			return err
		}
	}
	models, err := a.spec.parseModels(body)
	if err != nil {
		a.carryModels(st)
		return err
	}
	a.models = models
	st.Models = slices.Clone(models)
	return nil
}

// carryModels reports the last good list, marked stale, when there is one.
func (a *adapter) carryModels(st *Status) {
	if a.models != nil {
		st.Models = slices.Clone(a.models)
		st.ModelsStale = true
	}
}

// readLoad reads the load from the engine's metrics (or, where there are
// none, from Config.InFlight). fresh is false when nothing was read this
// poll; err says why when that is a fault.
func (a *adapter) readLoad(ctx context.Context, live bool) (l load, fresh bool, err error) {
	switch {
	case a.metricsURL != "":
		if !live {
			return load{}, false, nil
		}
		body, err := a.doOK(ctx, http.MethodGet, a.metricsURL, "", acceptText)
		if err != nil {
			if a.slotsURL != "" && metricsDisabled(err) {
				// llama.cpp without --metrics: /slots still tells how
				// many requests run; the queue stays unknown.
				return a.readSlots(ctx)
			}
			return load{}, false, err
		}
		mfs, err := parseMetrics(body)
		if err != nil {
			return load{}, false, err
		}
		l, err := mfs.readLoad(a.spec)
		if err != nil {
			return load{}, false, err
		}
		return l, true, nil
	case a.inFlight != nil:
		// Ollama exports no load; the proxy's own count is exact for the
		// traffic it carries, and fresh on every poll.
		return load{queue: Unknown, running: max(a.inFlight(), 0), kv: Unknown}, true, nil
	default:
		return load{queue: Unknown, running: Unknown, kv: Unknown}, true, nil
	}
}

// metricsDisabled: llama.cpp answers 501 ("Start it with `--metrics`") when
// metrics are off; a build without the route answers 404.
func metricsDisabled(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && (se.Code == http.StatusNotImplemented || se.Code == http.StatusNotFound)
}

func (a *adapter) readSlots(ctx context.Context) (load, bool, error) {
	body, err := a.doOK(ctx, http.MethodGet, a.slotsURL, "", "application/json")
	if err != nil {
		return load{}, false, fmt.Errorf("metrics off and slots unreadable: %w", err)
	}
	n, err := parseSlots(body)
	if err != nil {
		return load{}, false, fmt.Errorf("metrics off and slots unreadable: %w", err)
	}
	return load{queue: Unknown, running: n, kv: Unknown}, true, nil
}

// applyLoad records a fresh load, or carries the last good one while it is
// at most staleAfter polls old.
func (a *adapter) applyLoad(st *Status, l load, fresh bool) {
	if fresh {
		a.last, a.haveLast, a.age = l, true, 0
	} else {
		a.age++
		st.LoadAge = a.age
		if !a.haveLast || a.age > a.staleAfter {
			return
		}
		l = a.last
	}
	st.QueueDepth, st.Running, st.KVCacheUsage = l.queue, l.running, l.kv
}

// do sends one request and reads at most maxBody bytes of the answer. err is
// a transport error; any status comes back in code.
func (a *adapter) do(ctx context.Context, method, url, body, accept string) (code int, data []byte, err error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: reading body: %w", method, url, err)
	}
	if len(data) > maxBody {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: response over %d bytes", method, url, maxBody)
	}
	return resp.StatusCode, data, nil
}

// doOK is do that also fails on a non-2xx status.
func (a *adapter) doOK(ctx context.Context, method, url, body, accept string) ([]byte, error) {
	code, data, err := a.do(ctx, method, url, body, accept)
	if err != nil {
		return nil, err
	}
	if code/100 != 2 {
		return nil, &StatusError{Method: method, URL: url, Code: code}
	}
	return data, nil
}
