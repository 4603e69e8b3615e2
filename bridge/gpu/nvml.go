package gpu

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/rs/zerolog"
)

// HarmlessXIDs are the XIDs the Kubernetes NVIDIA device plugin treats as
// application errors rather than GPU failures: 13 (graphics engine
// exception), 31 (GPU memory page fault), 43 (GPU stopped processing),
// 45 (preemptive cleanup), 68 (video processor exception) and 109 (context
// switch timeout). Any other critical XID marks the GPU unhealthy.
var HarmlessXIDs = map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 109: true}

// NVMLLibrary is the NVML entry point: nvml.New() in production, the
// go-nvml mock in tests.
type NVMLLibrary = nvml.Interface

// NVMLOptions configure OpenNVML.
type NVMLOptions struct {
	// Select picks the devices this bridge reports (CUDA_VISIBLE_DEVICES
	// style); zero selects all.
	Select Selector
	// Logger gets the one line about NVML's availability and XID events.
	Logger zerolog.Logger
	// DisableEvents skips XID/ECC event watching (no goroutine).
	DisableEvents bool
}

type device struct {
	h        nvml.Device
	index    int
	uuid     string
	name     string
	memTotal uint64
}

// nvmlSampler reads selected GPUs through NVML.
type nvmlSampler struct {
	// immutable after OpenNVML
	lib   nvml.Interface
	devs  []device
	useV2 bool
	log   zerolog.Logger

	// health is sticky: once a GPU failed it stays failed until restart,
	// like the device plugin does.
	unhealthy atomic.Pointer[string]

	mu     sync.Mutex // serialises NVML calls from Sample and Close
	closed bool

	stop chan struct{}
	done chan struct{}
}

// unavailable is what OpenNVML returns when NVML cannot be used.
type unavailable struct{ None }

// OpenNVML initialises NVML through lib (nvml.New() in production, the
// go-nvml mock in tests), reads the static facts of the selected devices once
// and starts watching XID events. When Init fails (no driver, no library),
// it logs one clear line and returns a sampler that reports no GPU, plus the
// reason as an error the caller may use to fall back to Static; no NVML
// function is ever called after a failed Init.
func OpenNVML(lib nvml.Interface, opts NVMLOptions) (Sampler, error) {
	log := opts.Logger.With().Str("component", "gpu").Logger()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		err := fmt.Errorf("gpu: NVML unavailable (%s): no GPU metrics from this host", errString(ret))
		log.Warn().Str("nvml", errString(ret)).Msg("NVML unavailable; publishing static or no GPU fields")
		return unavailable{}, err
	}
	s := &nvmlSampler{lib: lib, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	s.useV2 = lib.Extensions().LookupSymbol("nvmlDeviceGetMemoryInfo_v2") == nil
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		lib.Shutdown()
		return unavailable{}, fmt.Errorf("gpu: NVML device count: %s", errString(ret))
	}
	for i := 0; i < n; i++ {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			log.Warn().Int("index", i).Str("nvml", errString(ret)).Msg("GPU handle unreadable; skipped")
			continue
		}
		uuid, _ := h.GetUUID()
		if !opts.Select.Match(i, uuid) {
			continue
		}
		name, ret := h.GetName()
		if ret != nvml.SUCCESS {
			name = "unknown"
		}
		d := device{h: h, index: i, uuid: uuid, name: name}
		if s.useV2 {
			if m, ret := h.GetMemoryInfo_v2(); ret == nvml.SUCCESS {
				d.memTotal = m.Total
			}
		} else if m, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
			d.memTotal = m.Total
		}
		s.devs = append(s.devs, d)
	}
	log.Info().Int("devices", len(s.devs)).Int("host_devices", n).Str("select", opts.Select.String()).Bool("memory_v2", s.useV2).Msg("NVML ready")
	if opts.DisableEvents || len(s.devs) == 0 {
		close(s.done)
		return s, nil
	}
	set, ret := lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		log.Info().Str("nvml", errString(ret)).Msg("XID events unavailable")
		close(s.done)
		return s, nil
	}
	registered := 0
	for _, d := range s.devs {
		types := uint64(nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError)
		if ret := d.h.RegisterEvents(types, set); ret == nvml.SUCCESS {
			registered++
		} else {
			log.Info().Int("index", d.index).Str("nvml", errString(ret)).Msg("XID events not supported on this GPU")
		}
	}
	if registered == 0 {
		set.Free()
		close(s.done)
		return s, nil
	}
	go s.watch(set)
	return s, nil
}

// watch waits for XID/ECC events until Close.
func (s *nvmlSampler) watch(set nvml.EventSet) {
	defer close(s.done)
	defer set.Free()
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		e, ret := set.Wait(500) // ms; short so Close is prompt
		if ret == nvml.ERROR_TIMEOUT {
			continue
		}
		if ret != nvml.SUCCESS {
			s.log.Warn().Str("nvml", errString(ret)).Msg("XID event wait failed; event watching stopped")
			return
		}
		s.onEvent(e)
	}
}

func (s *nvmlSampler) onEvent(e nvml.EventData) {
	idx := -1
	if e.Device != nil {
		if i, ret := e.Device.GetIndex(); ret == nvml.SUCCESS {
			idx = i
		}
	}
	switch {
	case e.EventType&nvml.EventTypeXidCriticalError != 0:
		if HarmlessXIDs[e.EventData] {
			s.log.Info().Uint64("xid", e.EventData).Int("gpu", idx).Msg("application XID; GPU stays healthy")
			return
		}
		s.markUnhealthy(fmt.Sprintf("XID %d on GPU %d", e.EventData, idx))
	case e.EventType&nvml.EventTypeDoubleBitEccError != 0:
		s.markUnhealthy(fmt.Sprintf("uncorrectable ECC error on GPU %d", idx))
	}
}

func (s *nvmlSampler) markUnhealthy(reason string) {
	if s.unhealthy.CompareAndSwap(nil, &reason) {
		s.log.Error().Str("reason", reason).Msg("GPU unhealthy; publishing gpu.healthy=false")
	}
}

// Sample reads the dynamic values of every selected device.
func (s *nvmlSampler) Sample() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{Source: SourceNVML, Healthy: true, Devices: make([]Device, 0, len(s.devs))}
	if s.closed {
		return Snapshot{Source: SourceNone, Healthy: true}
	}
	for _, d := range s.devs {
		out := Device{Index: d.index, UUID: d.uuid, Name: d.name, MemTotal: d.memTotal, Util: -1, TempC: -1, PowerMW: -1}
		if s.useV2 {
			if m, ret := d.h.GetMemoryInfo_v2(); ret == nvml.SUCCESS {
				out.MemFree, out.MemKnown = m.Free, true
			}
		} else if m, ret := d.h.GetMemoryInfo(); ret == nvml.SUCCESS {
			out.MemFree, out.MemKnown = m.Free, true
		}
		if u, ret := d.h.GetUtilizationRates(); ret == nvml.SUCCESS {
			out.Util = int(u.Gpu)
		}
		if t, ret := d.h.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
			out.TempC = int(t)
		}
		if p, ret := d.h.GetPowerUsage(); ret == nvml.SUCCESS {
			out.PowerMW = int(p)
		}
		if c, ret := d.h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); ret == nvml.SUCCESS {
			out.ECCUncorrected = c
			if c > 0 {
				s.markUnhealthy(fmt.Sprintf("%d uncorrectable ECC errors on GPU %d", c, d.index))
			}
		}
		if cur, _, ret := d.h.GetMigMode(); ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE {
			out.MIGDevices = s.countMIG(d.h)
		}
		snap.Devices = append(snap.Devices, out)
	}
	if r := s.unhealthy.Load(); r != nil {
		snap.Healthy, snap.Reason = false, *r
	}
	return snap
}

func (s *nvmlSampler) countMIG(h nvml.Device) int {
	max, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return 0
	}
	n := 0
	for i := 0; i < max; i++ {
		if _, ret := h.GetMigDeviceHandleByIndex(i); ret == nvml.SUCCESS {
			n++
		}
	}
	return n
}

// Close stops event watching and shuts NVML down. Idempotent.
func (s *nvmlSampler) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("gpu: NVML shutdown: %s", errString(ret))
	}
	return nil
}

func errString(r nvml.Return) string {
	// nvml.Return.Error() calls into the library, which is not loaded when
	// Init failed; name the common codes ourselves.
	switch r {
	case nvml.SUCCESS:
		return "success"
	case nvml.ERROR_UNINITIALIZED:
		return "uninitialized"
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "library libnvidia-ml.so.1 not found"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "driver not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission"
	case nvml.ERROR_NOT_SUPPORTED:
		return "not supported"
	case nvml.ERROR_FUNCTION_NOT_FOUND:
		return "function not found"
	case nvml.ERROR_TIMEOUT:
		return "timeout"
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost"
	}
	return fmt.Sprintf("NVML error %d", int(r))
}
