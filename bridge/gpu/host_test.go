package gpu

import (
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/rs/zerolog"
)

// TestThisHost opens the real NVML library of the machine running the test.
// Without a driver (CI) it must fail cleanly with one log line and fall back
// to the static devices; with one, it must read at least one device.
func TestThisHost(t *testing.T) {
	var buf strings.Builder
	static := []Device{{Name: "NVIDIA L4", MemTotal: 24 << 30, Util: -1}}
	s, err := Open(nvml.New(), NVMLOptions{Logger: zerolog.New(&buf)}, static)
	if err != nil {
		t.Logf("no NVML here: %v", err)
		if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.Contains(buf.String(), "NVML unavailable") {
			t.Fatalf("want one clear log line about NVML, got %q", buf.String())
		}
		snap := s.Sample()
		if snap.Source != SourceStatic || Summarize(snap).Model != "NVIDIA L4" {
			t.Fatalf("fallback to static devices: %+v", snap)
		}
		if _, err := Open(nvml.New(), NVMLOptions{Logger: zerolog.Nop()}, nil); err == nil {
			t.Fatal("second open succeeded where the first failed")
		}
		return
	}
	defer s.Close()
	snap := s.Sample()
	t.Logf("NVML on this host: %+v", Summarize(snap))
	if snap.Source != SourceNVML {
		t.Fatalf("%+v", snap)
	}
}
