package nacosreg

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nacos-group/nacos-sdk-go/v2/clients"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/config_client"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	"github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/common/logger"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
	"github.com/rs/zerolog"
)

// Client talks to Nacos for naming and config. Build it with New; Close it
// when done.
type Client struct {
	// immutable after New
	opts   Options
	log    zerolog.Logger
	naming naming_client.INamingClient
	config config_client.IConfigClient

	// cfgMu serialises calls into the SDK's config client, whose lazy
	// connection handling is not safe for concurrent first use.
	cfgMu sync.Mutex

	// guarded by mu
	mu        sync.Mutex
	closed    bool
	subs      map[*subscription]struct{}
	listeners map[*listener]struct{}
}

// New connects to the Nacos servers in opts. The naming connection is made
// eagerly; an unreachable Nacos is an error here, not a hang.
func New(opts Options) (*Client, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	servers, err := ParseServers(o.Servers)
	if err != nil {
		return nil, err
	}
	// Installed before the SDK builds its own, so it never opens a log file.
	logger.SetLogger(newSDKLogger(o.Logger, o.SDKLogLevel))

	cc := o.clientConfig()
	sc := make([]constant.ServerConfig, len(servers))
	for i, s := range servers {
		sc[i] = constant.ServerConfig{Scheme: s.Scheme, IpAddr: s.Host, Port: s.Port, GrpcPort: s.GRPCPort, ContextPath: s.ContextPath}
		if sc[i].ContextPath == "" {
			sc[i].ContextPath = "/nacos"
		}
	}
	param := vo.NacosClientParam{ClientConfig: &cc, ServerConfigs: sc}
	c := &Client{
		opts:      o,
		log:       o.Logger.With().Str("component", "nacosreg").Logger(),
		subs:      map[*subscription]struct{}{},
		listeners: map[*listener]struct{}{},
	}
	if c.naming, err = clients.NewNamingClient(param); err != nil {
		return nil, fmt.Errorf("nacosreg: connect naming to %s: %w", strings.Join(o.Servers, ","), err)
	}
	// The config client gets its own copy: the SDK mutates what it is given.
	cc2 := o.clientConfig()
	param.ClientConfig = &cc2
	if c.config, err = clients.NewConfigClient(param); err != nil {
		c.naming.CloseClient()
		return nil, fmt.Errorf("nacosreg: connect config to %s: %w", strings.Join(o.Servers, ","), err)
	}
	// The SDK creates the config client's gRPC connection lazily, on the
	// first request, without synchronisation: two first requests at once (two
	// listeners, or a listener and the SDK's own listen loop) race inside the
	// SDK. One request now, before anything else can run, creates it safely.
	if _, err := c.config.GetConfig(vo.ConfigParam{DataId: "nacos-ai-bridge.warmup", Group: o.Group}); err != nil && !isNotFound(err) {
		c.log.Debug().Err(err).Msg("config connection warm-up failed; the SDK retries on use")
	}
	return c, nil
}

func (o Options) clientConfig() constant.ClientConfig {
	return constant.ClientConfig{
		NamespaceId:          o.Namespace,
		TimeoutMs:            uint64(o.Timeout.Milliseconds()),
		Username:             o.Username,
		Password:             o.Password,
		CacheDir:             o.CacheDir,
		LogDir:               o.LogDir,
		LogLevel:             o.SDKLogLevel,
		NotLoadCacheAtStart:  true,
		UpdateCacheWhenEmpty: true,
		// AsyncUpdateService stays off: the SDK's refresh goroutine
		// processes a service concurrently with the push goroutine and sorts
		// the cached host slice in place while a callback may be reading it
		// (service_info_holder.go), a data race in the SDK.
		AppName: o.AppName,
		TLSCfg: constant.TLSConfig{
			Appointed:          true,
			Enable:             o.TLS.Enable,
			TrustAll:           o.TLS.TrustAll,
			CaFile:             o.TLS.CAFile,
			CertFile:           o.TLS.CertFile,
			KeyFile:            o.TLS.KeyFile,
			ServerNameOverride: o.TLS.ServerName,
		},
	}
}

// Group returns the default group of this client.
func (c *Client) Group() string { return c.opts.Group }

func (c *Client) group(g string) string {
	if g == "" {
		return c.opts.Group
	}
	return g
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Register registers r as an ephemeral instance: it lives as long as this
// client's connection, and the SDK re-registers it after a reconnect.
func (c *Client) Register(r Registration) error {
	if c.isClosed() {
		return ErrClosed
	}
	p := c.registerParam(r)
	if c.opts.RNacosCompat && len(p.Metadata) > 0 {
		p.Metadata = nil
		ok, err := c.naming.RegisterInstance(p)
		if err := c.wrap("register", r, ok, err); err != nil {
			return err
		}
		return c.Update(r)
	}
	ok, err := c.naming.RegisterInstance(p)
	return c.wrap("register", r, ok, err)
}

// Update rewrites the instance's flags and metadata. In Nacos 2.x and 3.x
// this is a full re-register, and every write pushes the whole instance list
// to every subscriber, changed or not: call it only when it is worth a push.
func (c *Client) Update(r Registration) error {
	if c.isClosed() {
		return ErrClosed
	}
	p := c.registerParam(r)
	ok, err := c.naming.UpdateInstance(vo.UpdateInstanceParam{
		Ip: p.Ip, Port: p.Port, Weight: p.Weight, Enable: p.Enable, Healthy: p.Healthy,
		Metadata: p.Metadata, ClusterName: p.ClusterName, ServiceName: p.ServiceName,
		GroupName: p.GroupName, Ephemeral: true,
	})
	return c.wrap("update", r, ok, err)
}

// Deregister removes the instance.
func (c *Client) Deregister(r Registration) error {
	if c.isClosed() {
		return ErrClosed
	}
	ok, err := c.naming.DeregisterInstance(vo.DeregisterInstanceParam{
		Ip: r.IP, Port: uint64(r.Port), Cluster: r.Cluster,
		ServiceName: r.Service, GroupName: c.group(r.Group), Ephemeral: true,
	})
	return c.wrap("deregister", r, ok, err)
}

func (c *Client) registerParam(r Registration) vo.RegisterInstanceParam {
	w := r.Weight
	if w <= 0 {
		w = 1
	}
	return vo.RegisterInstanceParam{
		Ip: r.IP, Port: uint64(r.Port), Weight: w, Enable: r.Enabled, Healthy: true,
		Metadata: r.Metadata, ClusterName: r.Cluster, ServiceName: r.Service,
		GroupName: c.group(r.Group), Ephemeral: true, // explicit: v2 gRPC registration must be ephemeral
	}
}

func (c *Client) wrap(op string, r Registration, ok bool, err error) error {
	if err == nil && !ok {
		err = errors.New("server answered false")
	}
	if err != nil {
		return fmt.Errorf("nacosreg: %s %s@%s (%s:%d): %w", op, r.Service, c.group(r.Group), r.IP, r.Port, err)
	}
	return nil
}

// List returns the instances of a service, healthy or not, enabled or not.
// For a service this client subscribes to it reads the client's cache.
func (c *Client) List(service, group string) ([]Instance, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	got, err := c.naming.SelectAllInstances(vo.SelectAllInstancesParam{ServiceName: service, GroupName: c.group(group)})
	if err != nil {
		return nil, fmt.Errorf("nacosreg: list %s@%s: %w", service, c.group(group), err)
	}
	return convert(service, got), nil
}

func convert(service string, in []model.Instance) []Instance {
	out := make([]Instance, 0, len(in))
	for _, m := range in {
		md := make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			md[k] = v
		}
		out = append(out, Instance{
			ID: m.InstanceId, Service: service, Cluster: m.ClusterName, IP: m.Ip, Port: int(m.Port),
			Weight: m.Weight, Healthy: m.Healthy, Enabled: m.Enable, Ephemeral: m.Ephemeral, Metadata: md,
		})
	}
	return out
}

// Close stops every subscription and listener, then closes the SDK clients.
// It is idempotent. An ephemeral instance disappears from Nacos once the
// connection is gone; deregister first for a prompt removal.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	subs := make([]*subscription, 0, len(c.subs))
	for s := range c.subs {
		subs = append(subs, s)
	}
	ls := make([]*listener, 0, len(c.listeners))
	for l := range c.listeners {
		ls = append(ls, l)
	}
	c.mu.Unlock()
	for _, s := range subs {
		s.Stop()
	}
	for _, l := range ls {
		l.Stop()
	}
	c.naming.CloseClient()
	c.config.CloseClient()
	return nil
}
