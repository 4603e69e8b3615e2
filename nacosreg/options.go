package nacosreg

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// DefaultGroup is the group used when Options.Group is empty.
const DefaultGroup = "DEFAULT_GROUP"

// Options configure a Client. The zero value is not usable: Servers is
// required. Every other field has a useful default.
type Options struct {
	// Servers lists the Nacos servers, several for a cluster. Each entry is
	// "host:port", "http://host:port" or "https://host:port[/context]"; the
	// client gRPC port is the HTTP port plus 1000 unless given as
	// "host:port?grpc=PORT".
	Servers []string
	// Namespace is the namespace ID; empty means "public".
	Namespace string
	// Group is the default group for services and configs.
	Group string
	// Username and Password enable Nacos authentication when set. They are
	// never logged.
	Username string
	Password string
	// TLS enables TLS to the servers.
	TLS TLSOptions
	// Timeout bounds each request to Nacos (default 5 s).
	Timeout time.Duration
	// CacheDir and LogDir hold the SDK's service/config snapshots and its
	// log file. They default to <user cache dir>/nacos-ai-bridge/sdk/...,
	// never to the working directory.
	CacheDir string
	LogDir   string
	// Logger receives this package's and the SDK's log lines.
	Logger zerolog.Logger
	// SDKLogLevel is the level ("debug", "info", "warn", "error") at or
	// above which the SDK's own lines reach Logger. Default "warn": the SDK
	// is chatty at info.
	SDKLogLevel string
	// ConfigResync is how often a Listener re-reads its config from the
	// server even without a push (default 30 s; negative disables). The SDK
	// re-checks a config it considers in sync only every 5 minutes, so a lost
	// change notification (seen with r-nacos 0.8.8, about one change in four)
	// would otherwise leave a stale config for that long.
	ConfigResync time.Duration
	// AppName is reported to the server for its connection list.
	AppName string
	// RNacosCompat works around r-nacos (0.8.8), which pins the metadata an
	// instance carried at its first registration and ignores the metadata of
	// later re-registers from the SDK (naming/service.rs: "instance_metadata_map"
	// has priority). With it set, Register first registers without metadata,
	// then writes the metadata with an update. Java Nacos needs no such thing.
	RNacosCompat bool
}

// TLSOptions configure TLS towards Nacos.
type TLSOptions struct {
	Enable     bool
	TrustAll   bool
	CAFile     string
	CertFile   string
	KeyFile    string
	ServerName string
}

// ServerAddr is one parsed entry of Options.Servers.
type ServerAddr struct {
	Scheme      string
	Host        string
	Port        uint64
	GRPCPort    uint64
	ContextPath string
}

// ParseServers parses a comma-separated or listed set of server addresses.
func ParseServers(list []string) ([]ServerAddr, error) {
	var out []ServerAddr
	for _, item := range list {
		for _, s := range strings.Split(item, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			a, err := parseServer(s)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("nacosreg: no Nacos server address given")
	}
	return out, nil
}

func parseServer(s string) (ServerAddr, error) {
	raw := s
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return ServerAddr{}, fmt.Errorf("nacosreg: server address %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return ServerAddr{}, fmt.Errorf("nacosreg: server address %q: scheme must be http or https", raw)
	}
	host, portStr, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, portStr = u.Host, "8848"
	}
	if host == "" {
		return ServerAddr{}, fmt.Errorf("nacosreg: server address %q: missing host", raw)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return ServerAddr{}, fmt.Errorf("nacosreg: server address %q: bad port %q", raw, portStr)
	}
	a := ServerAddr{Scheme: u.Scheme, Host: host, Port: port, GRPCPort: port + 1000, ContextPath: strings.TrimRight(u.Path, "/")}
	if g := u.Query().Get("grpc"); g != "" {
		gp, err := strconv.ParseUint(g, 10, 16)
		if err != nil || gp == 0 {
			return ServerAddr{}, fmt.Errorf("nacosreg: server address %q: bad grpc port %q", raw, g)
		}
		a.GRPCPort = gp
	}
	if a.GRPCPort > 65535 {
		return ServerAddr{}, fmt.Errorf("nacosreg: server address %q: grpc port %d out of range (set ?grpc=PORT)", raw, a.GRPCPort)
	}
	return a, nil
}

// withDefaults returns a copy with every default applied.
func (o Options) withDefaults() (Options, error) {
	if o.Group == "" {
		o.Group = DefaultGroup
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.ConfigResync == 0 {
		o.ConfigResync = 30 * time.Second
	}
	if o.SDKLogLevel == "" {
		o.SDKLogLevel = "warn"
	}
	if _, err := zerolog.ParseLevel(o.SDKLogLevel); err != nil {
		return o, fmt.Errorf("nacosreg: SDK log level %q: %w", o.SDKLogLevel, err)
	}
	if o.CacheDir == "" || o.LogDir == "" {
		base, err := os.UserCacheDir()
		if err != nil || base == "" {
			base = os.TempDir()
		}
		root := filepath.Join(base, "nacos-ai-bridge", "sdk")
		if o.CacheDir == "" {
			o.CacheDir = filepath.Join(root, "cache")
		}
		if o.LogDir == "" {
			o.LogDir = filepath.Join(root, "log")
		}
	}
	for _, d := range []string{o.CacheDir, o.LogDir} {
		if !filepath.IsAbs(d) {
			return o, fmt.Errorf("nacosreg: directory %q must be absolute (the SDK would resolve it against the working directory)", d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return o, fmt.Errorf("nacosreg: %w", err)
		}
	}
	return o, nil
}
