// Command warmup waits until every server in NACOS_SERVERS serves SDK
// clients promptly. test/run.sh runs it, built without -race, before the
// integration tests.
//
// Why: a Nacos server answers HTTP before its gRPC side is warm, and a
// nacos-sdk-go v2.3.5 client whose first connect takes over 5 s races with
// itself (rpc_client.go: the health-check timer reads currentConnection while
// Start still writes it). The race detector would blame whichever test
// happened to connect first; this program absorbs the slow start instead.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
	"github.com/nacos-ai-bridge/nacos-ai-bridge/test/nacostest"
)

func main() {
	servers, err := nacostest.Servers()
	if err != nil {
		fmt.Fprintln(os.Stderr, "warmup:", err)
		os.Exit(1)
	}
	tmp, err := os.MkdirTemp("", "nacos-warmup-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "warmup:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(tmp)
	for _, s := range servers {
		start := time.Now()
		fast := 0
		for fast < 2 {
			if time.Since(start) > 2*time.Minute {
				fmt.Fprintf(os.Stderr, "warmup: %s does not serve clients promptly after 2m\n", s.Kind)
				os.Exit(1)
			}
			t0 := time.Now()
			c, err := nacosreg.New(nacosreg.Options{
				Servers: []string{s.Addr}, Logger: zerolog.Nop(),
				CacheDir: filepath.Join(tmp, "cache"), LogDir: filepath.Join(tmp, "log"),
			})
			if err == nil {
				_, err = c.List("warmup", "")
				c.Close()
			}
			if err == nil && time.Since(t0) < time.Second {
				fast++
			} else {
				fast = 0
				time.Sleep(200 * time.Millisecond)
			}
		}
		fmt.Printf("warmup: %s serves clients promptly after %v\n", s.Kind, time.Since(start).Round(100*time.Millisecond))
	}
}
