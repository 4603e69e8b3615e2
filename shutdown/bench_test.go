package shutdown

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func BenchmarkTrackerBeginEnd(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		tr := NewTracker()
		b.ReportAllocs()
		for b.Loop() {
			if tr.Begin() {
				tr.End()
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		tr := NewTracker()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if tr.Begin() {
					tr.End()
				}
			}
		})
	})
	b.Run("parallel-refusing", func(b *testing.B) {
		tr := NewTracker()
		tr.Refuse()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if tr.Begin() {
					tr.End()
				}
			}
		})
	})
}

// nopWriter is a ResponseWriter that allocates nothing, so the benchmark
// measures the middleware rather than the recorder.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}

// BenchmarkMiddleware compares a tracked handler with the bare handler as the
// baseline, in the same run.
func BenchmarkMiddleware(b *testing.B) {
	body := []byte("ok")
	bare := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) })
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", bare},
		{"tracked", NewTracker().Middleware(bare)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := &nopWriter{h: http.Header{}}
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				for pb.Next() {
					bc.h.ServeHTTP(w, r)
				}
			})
		})
	}
}
