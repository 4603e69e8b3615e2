package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadRunConfig(t *testing.T) {
	noEnv := func(string) string { return "" }
	c, err := loadRunConfig("../../conf/bridge.yaml", noEnv)
	if err != nil {
		t.Fatalf("the example config must load: %v", err)
	}
	if c.Service.Name != "chat" || c.Backend.Engine != "vllm" || c.Health.Cycle.Seconds() != 5 || !c.Proxy.Enabled {
		t.Fatalf("%+v", c)
	}
	env := map[string]string{"NACOS_ADDR": "10.0.0.1:8848,10.0.0.2:8848", "NACOS_AI_SERVICE": "embed", "NACOS_AI_BACKEND_URL": "http://127.0.0.1:9999", "NACOS_PASSWORD": "s3cret"}
	c, err = loadRunConfig("../../conf/bridge.yaml", func(k string) string { return env[k] })
	if err != nil || len(c.Nacos.Servers) != 2 || c.Service.Name != "embed" || c.Backend.URL != "http://127.0.0.1:9999" || c.Nacos.Password != "s3cret" {
		t.Fatalf("env overrides: %v %+v", err, c)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("service:\n  port: 70000\n  ip: nowhere\nbackend:\n  engine: tgi\n  url: ftp://x\nlog:\n  level: loud\n"), 0o644)
	_, err = loadRunConfig(bad, noEnv)
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"nacos.servers: required", "service.name: required", `service.ip: "nowhere" is not an IP`, "service.port: 70000 is out of range",
		`backend.engine: "tgi" is not one of vllm`, `backend.url: "ftp://x" is not an http(s) URL`, `log.level: "loud"`} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error lacks %q:\n%v", want, err)
		}
	}
	noNames := filepath.Join(dir, "nonames.yaml")
	os.WriteFile(noNames, []byte("nacos: {servers: [127.0.0.1:8848]}\nservice: {name: s, port: 9000}\nbackend: {engine: openai, url: http://127.0.0.1:8000, metrics-path: /metrics}\n"), 0o644)
	if _, err := loadRunConfig(noNames, noEnv); err == nil || !strings.Contains(err.Error(), "backend.metrics-path: engine openai has no metric names") {
		t.Fatalf("openai metrics without names: %v", err)
	}
	named := filepath.Join(dir, "named.yaml")
	os.WriteFile(named, []byte("nacos: {servers: [127.0.0.1:8848]}\nservice: {name: s, port: 9000}\nbackend: {engine: openai, url: http://127.0.0.1:8000, metrics-path: /metrics, queue-metric: app_queue_depth}\n"), 0o644)
	if c, err := loadRunConfig(named, noEnv); err != nil || c.Backend.QueueMetric != "app_queue_depth" {
		t.Fatalf("openai metrics with a name: %v", err)
	}
	unknown := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(unknown, []byte("servise:\n  name: x\n"), 0o644)
	if _, err := loadRunConfig(unknown, noEnv); err == nil || !strings.Contains(err.Error(), "servise") {
		t.Fatalf("unknown key: %v", err)
	}
}
