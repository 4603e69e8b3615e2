package balancer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Transport is an http.RoundTripper that resolves http://<service>/... to a
// picked endpoint, reports each result to the balancer, and retries a
// connection failure on another endpoint while the retry budget allows.
// Only connection failures are retried (the request never reached a
// server); a request that reached one is never sent twice.
type Transport struct {
	// Balancers maps a service name (the URL host) to its balancer.
	Balancers map[string]*Balancer
	// Base sends the rewritten request (default http.DefaultTransport).
	Base http.RoundTripper
	// Budget limits retries (default: 20% of requests).
	Budget *RetryBudget
	// Request returns the balancer request for r (task, model, locale);
	// default: none, any capable endpoint.
	Request func(r *http.Request) Request
	// MaxAttempts bounds attempts per request (default 3).
	MaxAttempts int
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	b := t.Balancers[r.URL.Hostname()]
	if b == nil {
		return nil, fmt.Errorf("balancer: no balancer for service %q", r.URL.Hostname())
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	var breq Request
	if t.Request != nil {
		breq = t.Request(r)
	}
	attempts := t.MaxAttempts
	if attempts <= 0 {
		attempts = 3
	}
	if t.Budget != nil {
		t.Budget.Request()
	}
	var lastErr error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			if t.Budget != nil && !t.Budget.TryRetry() {
				break
			}
			if r.Body != nil && r.Body != http.NoBody {
				if r.GetBody == nil {
					break // the body cannot be replayed
				}
				body, err := r.GetBody()
				if err != nil {
					break
				}
				r.Body = body
			}
		}
		e, done, err := b.Pick(r.Context(), breq)
		if err != nil {
			if lastErr != nil {
				return nil, fmt.Errorf("%w (after: %v)", err, lastErr)
			}
			return nil, err
		}
		out := r.Clone(r.Context())
		out.URL.Scheme = "http"
		if r.URL.Scheme == "https" {
			out.URL.Scheme = "https"
		}
		out.URL.Host = e.Addr
		out.Host = r.Host
		resp, err := base.RoundTrip(out)
		if err != nil {
			done.Report(Result{Err: err})
			if isConnFailure(err) {
				lastErr = err
				breq.Exclude = append(breq.Exclude, e.Addr) // retry elsewhere
				continue
			}
			return nil, err
		}
		var rerr error
		if resp.StatusCode >= 500 {
			rerr = fmt.Errorf("balancer: %s answered %d", e.Addr, resp.StatusCode)
		}
		// Report when the body is finished, so streams count as in flight.
		resp.Body = &reportingBody{ReadCloser: resp.Body, done: done, err: rerr}
		return resp, nil
	}
	return nil, lastErr
}

// isConnFailure reports an error where the request cannot have reached the
// server: dial failures and refused connections.
func isConnFailure(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

type reportingBody struct {
	io.ReadCloser
	done     Done
	err      error
	reported bool
}

func (b *reportingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *reportingBody) Close() error {
	err := b.ReadCloser.Close()
	if !b.reported {
		b.reported = true
		b.done.Report(Result{Err: b.err})
	}
	return err
}
