package balancer

import (
	"github.com/nacos-ai-bridge/nacos-ai-bridge/metadata"
)

// Request describes what the caller needs.
type Request struct {
	// Task, e.g. "generation" or "embedding"; empty matches any instance.
	Task string
	// Model id; empty matches any instance.
	Model string
	// Locale and Region are preferences: matching instances are preferred,
	// the rest are used when none matches.
	Locale string
	Region string
	// MinFreeVRAMMiB and GPUModel are constraints.
	MinFreeVRAMMiB int64
	GPUModel       string
	// Exclude lists addresses (host:port) not to pick: a retry's earlier
	// attempts.
	Exclude []string
}

// Reasons reported in ErrNoEndpoint, one per filter.
const (
	ReasonNoInstance  = "no instance registered"
	ReasonNotEnabled  = "no enabled and healthy instance in Nacos"
	ReasonNotActive   = "no ACTIVE instance"
	ReasonNotWarm     = "no warm instance"
	ReasonUnhealthy   = "no instance passing its inference and GPU health"
	ReasonNoTask      = "no instance serves task"
	ReasonNoModel     = "no instance serves model"
	ReasonConstraints = "no instance meets the constraints"
	ReasonBreakerOpen = "every matching instance has its circuit breaker open"
)

// The static filters: they depend on the instance alone, so the snapshot
// applies them once per rebuild. Each returns whether e passes.

func nacosUp(e *Endpoint) bool { return e.Enabled && e.Healthy && e.Weight > 0 }

// active: lifecycle ACTIVE, or no lifecycle key at all (a plain Nacos
// instance, routed by its Nacos flags alone). DRAINING and STOPPED never pass.
func active(e *Endpoint) bool { return e.Meta.Lifecycle == metadata.Active || e.Meta.Lifecycle == "" }

// warm: ready, or no warm key (plain instance).
func warm(e *Endpoint) bool { return e.Meta.Warm == metadata.Ready || e.Meta.Warm == "" }

// healthy: neither the inference probe nor the GPU reported false.
func healthy(e *Endpoint) bool {
	return e.Meta.InferenceHealthy != metadata.False && e.Meta.GPUHealthy != metadata.False
}

// The request filters.

func servesTask(e *Endpoint, task string) bool {
	return task == "" || len(e.Meta.SupportedTasks) == 0 || e.Meta.HasTask(task)
}

// servesModel: listed, or the list is truncated ("+N") and might hold it,
// or the instance publishes no model list (a plain instance).
func servesModel(e *Endpoint, model string) bool {
	if model == "" || len(e.Meta.LoadedModels) == 0 && e.Meta.LoadedModelsMore == 0 {
		return true
	}
	has, unsure := e.Meta.HasModel(model)
	return has || unsure
}

// meets checks hard constraints. Unknown values do not pass a constraint:
// a caller that asked for 20 GiB free must not land on an instance that
// never said.
func meets(e *Endpoint, r *Request, now int64) bool {
	if r.MinFreeVRAMMiB > 0 {
		if !e.Meta.GPUMemAvailable.Set || e.Meta.GPUMemAvailable.V < r.MinFreeVRAMMiB || e.stale(now) {
			return false
		}
	}
	if r.GPUModel != "" && e.Meta.GPUModel != r.GPUModel {
		return false
	}
	return true
}

func excluded(e *Endpoint, r *Request) bool {
	for _, a := range r.Exclude {
		if a == e.Addr {
			return true
		}
	}
	return false
}
