package shutdown_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/shutdown"
)

// The bridge's wiring, in outline: track requests, and on SIGTERM mark the
// instance DRAINING, keep serving for the propagation delay, refuse, drain,
// deregister, and only then stop the HTTP server.
func Example() {
	tr := shutdown.NewTracker()
	srv := &http.Server{Addr: ":8000", Handler: tr.Middleware(http.DefaultServeMux)}

	done := make(chan struct{})
	stop := shutdown.Notify(context.Background(), func(ctx context.Context) {
		defer close(done)
		r := shutdown.Plan{
			MarkDraining: func(ctx context.Context) error { return nil /* publish DRAINING, enabled=false */ },
			Tracker:      tr,
			Deregister:   func(ctx context.Context) error { return nil /* publish STOPPED, deregister */ },
		}.Run(ctx)
		log.Printf("shutdown: %v", r)
		// Everything has drained or been abandoned: close what is left.
		srv.Close()
	}, func() { os.Exit(1) })
	defer stop()

	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
	<-done
}
