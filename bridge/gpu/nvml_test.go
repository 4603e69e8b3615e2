package gpu

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// box is an 8 x H100 mock whose dynamic readings we control, with an event
// queue the test feeds.
type box struct {
	*server.Server
	events chan nvml.EventData
	freed  chan struct{}
	calls  sync.Map // counts NVML calls by name after Init failed
}

func newBox(t *testing.T, hasV2 bool) *box {
	t.Helper()
	b := &box{Server: dgxh100.New(), events: make(chan nvml.EventData, 8), freed: make(chan struct{})}
	b.LookupSymbolFunc = func(sym string) error {
		if sym == "nvmlDeviceGetMemoryInfo_v2" && !hasV2 {
			return errors.New("undefined symbol")
		}
		return nil
	}
	for i, h := range b.Devices {
		d := h.(*server.Device)
		i := i
		d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 80 << 30, Free: 60 << 30}, nvml.SUCCESS
		}
		d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
			if !hasV2 {
				t.Error("GetMemoryInfo_v2 called on a driver without it")
			}
			// v2 excludes reserved memory: a little less than v1.
			return nvml.Memory_v2{Total: 79 << 30, Free: 59 << 30}, nvml.SUCCESS
		}
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: uint32(10 * i)}, nvml.SUCCESS }
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 55, nvml.SUCCESS }
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 350000, nvml.SUCCESS }
		d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	}
	b.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
				select {
				case e := <-b.events:
					return e, nvml.SUCCESS
				case <-time.After(time.Duration(ms) * time.Millisecond):
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
			},
			FreeFunc: func() nvml.Return { close(b.freed); return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	return b
}

func quiet() zerolog.Logger { return zerolog.Nop() }

func TestEightH100(t *testing.T) {
	b := newBox(t, true)
	s, err := OpenNVML(b, NVMLOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap := s.Sample()
	if snap.Source != SourceNVML || len(snap.Devices) != 8 || !snap.Healthy {
		t.Fatalf("snapshot %+v", snap)
	}
	sum := Summarize(snap)
	if sum.Count != 8 || sum.Mixed || !strings.Contains(sum.Model, "H100") {
		t.Fatalf("summary %+v", sum)
	}
	if sum.MemTotalMiB != 8*79*1024 || sum.MemFreeMiB != 8*59*1024 {
		t.Fatalf("memory from v2 expected: %+v", sum)
	}
	if sum.UtilPercent != (0+10+20+30+40+50+60+70)/8 {
		t.Fatalf("util %d", sum.UtilPercent)
	}
}

func TestDriverWithoutMemoryInfoV2(t *testing.T) {
	b := newBox(t, false)
	s, err := OpenNVML(b, NVMLOptions{Logger: quiet(), DisableEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sum := Summarize(s.Sample())
	if sum.MemTotalMiB != 8*80*1024 || sum.MemFreeMiB != 8*60*1024 {
		t.Fatalf("memory from v1 expected: %+v", sum)
	}
}

func TestSelectDevices(t *testing.T) {
	b := newBox(t, true)
	uuid3, _ := b.Devices[3].GetUUID()
	sel, err := ParseSelector("0,1," + uuid3[:12])
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenNVML(b, NVMLOptions{Logger: quiet(), Select: sel, DisableEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap := s.Sample()
	var idx []int
	for _, d := range snap.Devices {
		idx = append(idx, d.Index)
	}
	if len(idx) != 3 || idx[0] != 0 || idx[1] != 1 || idx[2] != 3 {
		t.Fatalf("selected %v, want [0 1 3]", idx)
	}
}

func TestXID(t *testing.T) {
	tests := []struct {
		name    string
		event   nvml.EventData
		healthy bool
	}{
		{"application XID 13 is harmless", nvml.EventData{EventType: nvml.EventTypeXidCriticalError, EventData: 13}, true},
		{"XID 109 is harmless", nvml.EventData{EventType: nvml.EventTypeXidCriticalError, EventData: 109}, true},
		{"XID 79 (fallen off the bus) is critical", nvml.EventData{EventType: nvml.EventTypeXidCriticalError, EventData: 79}, false},
		{"double-bit ECC is critical", nvml.EventData{EventType: nvml.EventTypeDoubleBitEccError}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBox(t, true)
			s, err := OpenNVML(b, NVMLOptions{Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			e := tt.event
			e.Device = b.Devices[2]
			b.events <- e
			// A second, harmless event proves the first was consumed.
			b.events <- nvml.EventData{EventType: nvml.EventTypeXidCriticalError, EventData: 13, Device: b.Devices[0]}
			deadline := time.Now().Add(5 * time.Second)
			for len(b.events) > 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			snap := s.Sample()
			if snap.Healthy != tt.healthy {
				t.Fatalf("healthy=%v (%s), want %v", snap.Healthy, snap.Reason, tt.healthy)
			}
			if !tt.healthy && !strings.Contains(snap.Reason, "GPU 2") {
				t.Fatalf("reason %q does not name GPU 2", snap.Reason)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-b.freed:
			default:
				t.Fatal("event set not freed on Close")
			}
			if err := s.Close(); err != nil { // idempotent
				t.Fatal(err)
			}
		})
	}
}

func TestUncorrectedECCCounterMarksUnhealthy(t *testing.T) {
	b := newBox(t, true)
	b.Devices[5].(*server.Device).GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		return 2, nvml.SUCCESS
	}
	s, _ := OpenNVML(b, NVMLOptions{Logger: quiet(), DisableEvents: true})
	defer s.Close()
	if snap := s.Sample(); snap.Healthy || !strings.Contains(snap.Reason, "GPU 5") {
		t.Fatalf("%+v", snap)
	}
}

func TestUnreadableValuesAreUnknown(t *testing.T) {
	b := newBox(t, true)
	d := b.Devices[0].(*server.Device)
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_GPU_IS_LOST }
	s, _ := OpenNVML(b, NVMLOptions{Logger: quiet(), DisableEvents: true})
	defer s.Close()
	snap := s.Sample()
	if snap.Devices[0].Util != -1 || snap.Devices[0].MemKnown {
		t.Fatalf("%+v", snap.Devices[0])
	}
	if sum := Summarize(snap); sum.MemFreeMiB != -1 {
		t.Fatalf("free memory must be unknown when one GPU is unreadable: %+v", sum)
	}
}

func TestInitFailureIsHarmless(t *testing.T) {
	// Every function but Init panics if called: after a failed Init, NVML
	// must not be touched (the real library would kill the process).
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	var buf strings.Builder
	s, err := OpenNVML(lib, NVMLOptions{Logger: zerolog.New(&buf)})
	if err == nil || !strings.Contains(err.Error(), "libnvidia-ml.so.1 not found") {
		t.Fatalf("err %v", err)
	}
	snap := s.Sample()
	if snap.Source != SourceNone || len(snap.Devices) != 0 || !snap.Healthy {
		t.Fatalf("%+v", snap)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.Contains(buf.String(), "NVML unavailable") {
		t.Fatalf("want exactly one clear log line, got %q", buf.String())
	}
	if len(lib.InitCalls()) != 1 {
		t.Fatal("Init called more than once")
	}
}

func TestMixedGPUs(t *testing.T) {
	snap := Snapshot{Healthy: true, Devices: []Device{
		{Name: "NVIDIA A100-SXM4-80GB", MemTotal: 80 << 30, MemKnown: true, Util: 10},
		{Name: "NVIDIA H100 80GB HBM3", MemTotal: 80 << 30, MemKnown: true, Util: 20},
		{Name: "NVIDIA H100 80GB HBM3", MemTotal: 80 << 30, MemKnown: true, Util: 30},
	}}
	sum := Summarize(snap)
	if sum.Model != "NVIDIA H100 80GB HBM3" || !sum.Mixed || sum.Count != 3 {
		t.Fatalf("%+v", sum)
	}
}

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in      string
		match   []int
		wantErr bool
	}{
		{"", []int{0, 1, 7}, false},
		{"all", []int{0, 5}, false},
		{"2,3", []int{2, 3}, false},
		{" 1 , 4 ", []int{1, 4}, false},
		{"0,-1,3", []int{0}, false}, // CUDA stops at the first invalid index
		{"none", nil, false},
		{"gpu0", nil, true},
	}
	for _, tt := range tests {
		sel, err := ParseSelector(tt.in)
		if (err != nil) != tt.wantErr {
			t.Fatalf("%q: err %v", tt.in, err)
		}
		if err != nil {
			continue
		}
		for _, i := range tt.match {
			if !sel.Match(i, "GPU-x") {
				t.Fatalf("%q should match %d", tt.in, i)
			}
		}
		if tt.in == "2,3" && sel.Match(0, "GPU-x") {
			t.Fatalf("%q matched 0", tt.in)
		}
	}
}

func TestStaticAndNone(t *testing.T) {
	st := Static{Devices: []Device{{Name: "NVIDIA L4", MemTotal: 24 << 30, Util: -1}}}
	sum := Summarize(st.Sample())
	if sum.Model != "NVIDIA L4" || sum.MemTotalMiB != 24*1024 || sum.MemFreeMiB != -1 || sum.UtilPercent != -1 {
		t.Fatalf("%+v", sum)
	}
	if sum := Summarize((None{}).Sample()); sum.Count != 0 || !sum.Healthy {
		t.Fatalf("%+v", sum)
	}
}

func BenchmarkSample8xH100(b *testing.B) {
	box := newBox(&testing.T{}, true)
	s, _ := OpenNVML(box, NVMLOptions{Logger: quiet(), DisableEvents: true})
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		_ = Summarize(s.Sample())
	}
}
