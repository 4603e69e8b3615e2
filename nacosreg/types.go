package nacosreg

import "errors"

// Instance is one service instance as Nacos holds it. Metadata is the raw
// key/value map; package metadata decodes it.
type Instance struct {
	ID        string
	Service   string
	Cluster   string
	IP        string
	Port      int
	Weight    float64
	Healthy   bool
	Enabled   bool
	Ephemeral bool
	Metadata  map[string]string
}

// Registration describes the instance this process registers. Update and
// Deregister identify the instance by Service, Group, IP, Port and Cluster.
type Registration struct {
	Service string
	// Group defaults to Options.Group.
	Group   string
	Cluster string
	IP      string
	Port    int
	// Weight defaults to 1 (Nacos rejects 0 for a healthy pick).
	Weight float64
	// Enabled false keeps Nacos's own healthy-instance selection (Java and
	// Go clients) away from the instance while it is not ACTIVE.
	Enabled  bool
	Metadata map[string]string
}

// ConfigEvent is one delivery of a config's content.
type ConfigEvent struct {
	DataID  string
	Group   string
	Content string
	// MD5 is the hex MD5 of Content, empty when Deleted.
	MD5 string
	// Deleted reports that the config does not exist (removed, or never
	// published).
	Deleted bool
}

// ErrConfigNotFound is returned by GetConfig for a config that does not exist.
var ErrConfigNotFound = errors.New("nacosreg: config not found")

// ErrClosed is returned by calls on a closed Client.
var ErrClosed = errors.New("nacosreg: client closed")

// Naming is the naming half of a Client, the interface that the bridge and
// the balancer depend on.
type Naming interface {
	Register(Registration) error
	Update(Registration) error
	Deregister(Registration) error
	List(service, group string) ([]Instance, error)
	Subscribe(service, group string, fn func([]Instance)) (Subscription, error)
}

// Configs is the config half of a Client.
type Configs interface {
	GetConfig(dataID, group string) (string, error)
	Listen(dataID, group string, fn func(ConfigEvent)) (Listener, error)
	PublishConfig(dataID, group, content, contentType string) error
	DeleteConfig(dataID, group string) error
}

// Subscription is a live subscription; Stop is idempotent.
type Subscription interface{ Stop() }

// Listener is a live config listener; Stop is idempotent.
type Listener interface{ Stop() }

var (
	_ Naming  = (*Client)(nil)
	_ Configs = (*Client)(nil)
)
