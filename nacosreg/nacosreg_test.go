package nacosreg

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestParseServers(t *testing.T) {
	tests := []struct {
		in      []string
		want    []ServerAddr
		wantErr string
	}{
		{[]string{"127.0.0.1:8848"}, []ServerAddr{{Scheme: "http", Host: "127.0.0.1", Port: 8848, GRPCPort: 9848}}, ""},
		{[]string{"a:1,b:2"}, []ServerAddr{{Scheme: "http", Host: "a", Port: 1, GRPCPort: 1001}, {Scheme: "http", Host: "b", Port: 2, GRPCPort: 1002}}, ""},
		{[]string{"https://n.example:443/nacos?grpc=9443"}, []ServerAddr{{Scheme: "https", Host: "n.example", Port: 443, GRPCPort: 9443, ContextPath: "/nacos"}}, ""},
		{[]string{"nacos"}, []ServerAddr{{Scheme: "http", Host: "nacos", Port: 8848, GRPCPort: 9848}}, ""},
		{[]string{"[::1]:8848"}, []ServerAddr{{Scheme: "http", Host: "::1", Port: 8848, GRPCPort: 9848}}, ""},
		{nil, nil, "no Nacos server address"},
		{[]string{" , "}, nil, "no Nacos server address"},
		{[]string{"h:0"}, nil, "bad port"},
		{[]string{"h:99999"}, nil, "bad port"},
		{[]string{"h:65000"}, nil, "grpc port 66000 out of range"},
		{[]string{"ftp://h:1"}, nil, "scheme must be http or https"},
		{[]string{"h:1?grpc=x"}, nil, "bad grpc port"},
	}
	for _, tt := range tests {
		got, err := ParseServers(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "nacosreg: ") {
				t.Fatalf("%v: err %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tt.in, err)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("%v: %+v", tt.in, got)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Fatalf("%v: got %+v want %+v", tt.in, got[i], tt.want[i])
			}
		}
	}
}

func TestDefaultsNeverUseWorkingDirectory(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	o, err := Options{Servers: []string{"x"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	for _, d := range []string{o.CacheDir, o.LogDir} {
		if !filepath.IsAbs(d) || strings.HasPrefix(d, wd) {
			t.Fatalf("dir %q is not outside the working directory %q", d, wd)
		}
	}
	if o.Group != DefaultGroup || o.Timeout <= 0 || o.SDKLogLevel != "warn" {
		t.Fatalf("%+v", o)
	}
	if _, err := (Options{CacheDir: "relative"}).withDefaults(); err == nil {
		t.Fatal("relative cache dir accepted")
	}
	if _, err := (Options{SDKLogLevel: "loud"}).withDefaults(); err == nil {
		t.Fatal("bad level accepted")
	}
	cc := o.clientConfig()
	if !cc.NotLoadCacheAtStart || !cc.UpdateCacheWhenEmpty || cc.CacheDir != o.CacheDir || cc.LogDir != o.LogDir {
		t.Fatalf("client config %+v", cc)
	}
}

func TestSDKLogger(t *testing.T) {
	var buf bytes.Buffer
	l := newSDKLogger(zerolog.New(&buf), "warn")
	l.Info("chatty")
	l.Warnf("server %s slow", "a")
	l.Errorf("connectionId 1 received error event, isRunning:false, error=%s", "grpc: the client connection is closing")
	l.Warn("read cache file failed. cause file doesn't exist")
	out := buf.String()
	if strings.Contains(out, "chatty") || strings.Contains(out, "closing") || strings.Contains(out, "doesn't exist") {
		t.Fatalf("quiet lines leaked: %s", out)
	}
	if !strings.Contains(out, `"level":"warn","component":"nacos-sdk","message":"server a slow"`) {
		t.Fatalf("warn line missing: %s", out)
	}
}

// A line the SDK repeats in a tight loop is logged once per window, the
// next copy carrying how many were held back; other lines pass.
func TestSDKLoggerCollapsesRepeats(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	l := newSDKLogger(zerolog.New(&buf), "warn")
	l.rep = newRepeats(5*time.Second, func() time.Time { return now })
	const spin = "refresh content and check md5 fail ,dataId=ai-inference-config,group=AI_SERVICE,tenant= "
	for range 300 {
		l.Error(spin)
	}
	l.Warn("another line")
	now = now.Add(5 * time.Second)
	l.Error(spin)
	l.Error(spin)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want the first copy, the other line and one summary:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], `"level":"error"`) || strings.Contains(lines[0], "repeated") ||
		!strings.Contains(lines[1], "another line") ||
		!strings.Contains(lines[2], `"repeated":299`) {
		t.Fatalf("unexpected lines:\n%s", buf.String())
	}
}
