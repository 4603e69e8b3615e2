// Package nacostest gives integration tests the real Nacos servers started by
// test/run.sh, and the Nacos HTTP open API calls an operator's console makes.
package nacostest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nacos-ai-bridge/nacos-ai-bridge/nacosreg"
)

// Server is one running Nacos server.
type Server struct {
	Kind string // java3, java2, rnacos
	Addr string // host:port of the HTTP API; gRPC is port+1000
}

// Servers parses NACOS_SERVERS ("java3=127.0.0.1:18848,rnacos=127.0.0.1:28848").
func Servers() ([]Server, error) {
	raw := os.Getenv("NACOS_SERVERS")
	var out []Server
	for _, part := range strings.Split(raw, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, addr, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("NACOS_SERVERS entry %q: want kind=host:port", part)
		}
		out = append(out, Server{Kind: kind, Addr: addr})
	}
	return out, nil
}

// ForEach runs fn as a subtest per server. Without servers the test is
// skipped, unless NACOS_REQUIRE=1 (set by make test), where it fails: a run
// that was meant to talk to Nacos must not pass without one.
func ForEach(t *testing.T, fn func(t *testing.T, s Server)) {
	t.Helper()
	servers, err := Servers()
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) == 0 {
		if os.Getenv("NACOS_REQUIRE") == "1" {
			t.Fatal("NACOS_REQUIRE=1 but NACOS_SERVERS is empty: no real Nacos to test against")
		}
		t.Skip("no NACOS_SERVERS: run through test/run.sh or make test")
	}
	for _, s := range servers {
		t.Run(s.Kind, func(t *testing.T) {
			warmUp(t, s)
			fn(t, s)
		})
	}
}

var warm sync.Map // kind -> struct{}

// warmUp waits, once per server, until its gRPC port accepts connections
// and its HTTP API answers. test/run.sh has already run test/warmup, which
// waits until SDK clients connect promptly; this is the check for runs
// that skipped it.
func warmUp(t *testing.T, s Server) {
	t.Helper()
	if _, done := warm.Load(s.Kind); done {
		return
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", grpcAddr(s.Addr), time.Second)
		if err == nil {
			conn.Close()
			if err = httpOK("http://" + s.Addr + "/nacos/v1/ns/instance/list?serviceName=warmup&healthyOnly=false"); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not ready for clients after 90s: %v", s.Kind, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	warm.Store(s.Kind, struct{}{})
}

func grpcAddr(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p+1000))
}

func httpOK(u string) error {
	resp, err := httpc.Get(u)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %d", u, resp.StatusCode)
	}
	return nil
}

// Client builds a nacosreg client for s whose SDK files go to a temp dir.
func Client(t testing.TB, s Server, mod ...func(*nacosreg.Options)) *nacosreg.Client {
	t.Helper()
	dir := t.TempDir()
	o := nacosreg.Options{
		Servers:  []string{s.Addr},
		Group:    "AI_SERVICE",
		CacheDir: filepath.Join(dir, "cache"),
		LogDir:   filepath.Join(dir, "log"),
		Logger:   zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
		Timeout:  5 * time.Second,
	}
	if s.Kind == "rnacos" {
		// r-nacos pins first-registration metadata, and drops some config
		// change notifications; see nacosreg.Options.
		o.RNacosCompat = true
		o.ConfigResync = 2 * time.Second
	}
	for _, m := range mod {
		m(&o)
	}
	c, err := nacosreg.New(o)
	if err != nil {
		t.Fatalf("%s: %v", s.Kind, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var httpc = &http.Client{Timeout: 10 * time.Second}

// PublishConfig publishes content through the HTTP open API, as the console
// does (v1 form POST, which every server kind we test accepts).
func PublishConfig(s Server, dataID, group, content, typ string) error {
	form := url.Values{"dataId": {dataID}, "group": {group}, "content": {content}, "type": {typ}}
	return call(http.MethodPost, "http://"+s.Addr+"/nacos/v1/cs/configs", form)
}

// DeleteConfig deletes a config through the HTTP open API.
func DeleteConfig(s Server, dataID, group string) error {
	q := url.Values{"dataId": {dataID}, "group": {group}}
	return call(http.MethodDelete, "http://"+s.Addr+"/nacos/v1/cs/configs?"+q.Encode(), nil)
}

func call(method, u string, form url.Values) error {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 || strings.TrimSpace(string(b)) == "false" {
		return fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}
