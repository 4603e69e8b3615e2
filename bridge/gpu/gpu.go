package gpu

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Source says where a Snapshot came from.
type Source string

// Sources.
const (
	SourceNVML   Source = "nvml"
	SourceStatic Source = "static"
	SourceNone   Source = "none"
)

// Device is one GPU (or one selected device) at the time of a sample.
type Device struct {
	Index    int
	UUID     string
	Name     string
	MemTotal uint64 // bytes
	MemFree  uint64 // bytes; 0 with MemKnown false when unreadable
	MemKnown bool
	// Util is the GPU utilisation in percent, -1 when unreadable.
	Util int
	// TempC is the temperature in °C, -1 when unreadable.
	TempC int
	// PowerMW is the power draw in milliwatts, -1 when unreadable.
	PowerMW int
	// ECCUncorrected is the volatile uncorrected ECC error count.
	ECCUncorrected uint64
	// MIGDevices is the number of MIG devices when MIG is enabled, else 0.
	MIGDevices int
}

// Snapshot is one sample of every selected GPU.
type Snapshot struct {
	Source  Source
	Devices []Device
	// Healthy is false after a critical XID or an uncorrectable ECC error;
	// Reason says which.
	Healthy bool
	Reason  string
}

// Sampler reads GPU state. Implementations: NVML, Static, None.
type Sampler interface {
	// Sample reads the current state; it never blocks for long and never
	// fails: an unreadable value is marked unknown in the Device.
	Sample() Snapshot
	// Close releases the sampler's resources and goroutines. Idempotent.
	Close() error
}

// Summary is a Snapshot reduced to what instance metadata publishes.
type Summary struct {
	Model       string // the most common name
	Mixed       bool   // more than one name
	Count       int
	MemTotalMiB int64
	MemFreeMiB  int64 // -1 when any device's free memory is unknown
	UtilPercent int   // mean, -1 when unknown
	Healthy     bool
}

// Summarize reduces s. Pure.
func Summarize(s Snapshot) Summary {
	sum := Summary{Count: len(s.Devices), Healthy: s.Healthy, UtilPercent: -1}
	if len(s.Devices) == 0 {
		sum.MemFreeMiB = -1
		return sum
	}
	names := map[string]int{}
	var total, free uint64
	freeKnown := true
	utilSum, utilN := 0, 0
	for _, d := range s.Devices {
		names[d.Name]++
		total += d.MemTotal
		if d.MemKnown {
			free += d.MemFree
		} else {
			freeKnown = false
		}
		if d.Util >= 0 {
			utilSum += d.Util
			utilN++
		}
	}
	best, bestN := "", -1
	for n, c := range names {
		if c > bestN || c == bestN && n < best { // ties: alphabetical, so it is stable
			best, bestN = n, c
		}
	}
	sum.Model, sum.Mixed = best, len(names) > 1
	sum.MemTotalMiB = int64(total >> 20)
	sum.MemFreeMiB = -1
	if freeKnown {
		sum.MemFreeMiB = int64(free >> 20)
	}
	if utilN > 0 {
		sum.UtilPercent = utilSum / utilN
	}
	return sum
}

// Selector picks devices, like CUDA_VISIBLE_DEVICES: indexes ("0,2") or
// UUIDs ("GPU-8c2…") or prefixes of UUIDs. The zero Selector selects all.
type Selector struct {
	indexes map[int]bool
	uuids   []string
	none    bool
}

// ParseSelector parses a CUDA_VISIBLE_DEVICES-style list. "" and "all" select
// every device; "none" or "-1" select none.
func ParseSelector(s string) (Selector, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "all":
		return Selector{}, nil
	case "none", "-1", "void":
		return Selector{none: true}, nil
	}
	sel := Selector{indexes: map[int]bool{}}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if n, err := strconv.Atoi(part); err == nil {
			if n < 0 {
				break // CUDA stops at the first invalid index
			}
			sel.indexes[n] = true
			continue
		}
		if !strings.HasPrefix(part, "GPU-") && !strings.HasPrefix(part, "MIG-") {
			return Selector{}, fmt.Errorf("gpu: visible devices %q: %q is neither an index nor a GPU-/MIG- UUID", s, part)
		}
		sel.uuids = append(sel.uuids, part)
	}
	return sel, nil
}

// Match reports whether the device with index i and uuid is selected.
func (s Selector) Match(i int, uuid string) bool {
	if s.none {
		return false
	}
	if s.indexes == nil && s.uuids == nil {
		return true
	}
	if s.indexes[i] {
		return true
	}
	for _, u := range s.uuids {
		if strings.HasPrefix(uuid, u) {
			return true
		}
	}
	return false
}

// String renders the selection.
func (s Selector) String() string {
	if s.none {
		return "none"
	}
	if s.indexes == nil && s.uuids == nil {
		return "all"
	}
	var parts []string
	for i := range s.indexes {
		parts = append(parts, strconv.Itoa(i))
	}
	sort.Strings(parts)
	return strings.Join(append(parts, s.uuids...), ",")
}

// Static serves fixed GPU facts from configuration, for hosts without a
// driver, or backends whose GPUs the bridge cannot see.
type Static struct{ Devices []Device }

// Sample returns the configured devices, healthy.
func (s Static) Sample() Snapshot {
	return Snapshot{Source: SourceStatic, Devices: append([]Device(nil), s.Devices...), Healthy: true}
}

// Close does nothing.
func (Static) Close() error { return nil }

// None reports no GPU.
type None struct{}

// Sample returns an empty, healthy snapshot.
func (None) Sample() Snapshot { return Snapshot{Source: SourceNone, Healthy: true} }

// Close does nothing.
func (None) Close() error { return nil }

// Open returns the best sampler for this host: NVML through lib when it
// initialises; otherwise Static with the configured devices, or None when
// none are configured. The NVML failure is logged once by OpenNVML and
// returned as the reason, for the bridge's status; it is not fatal.
func Open(lib NVMLLibrary, opts NVMLOptions, static []Device) (Sampler, error) {
	s, err := OpenNVML(lib, opts)
	if err == nil {
		return s, nil
	}
	if len(static) > 0 {
		return Static{Devices: static}, err
	}
	return None{}, err
}
