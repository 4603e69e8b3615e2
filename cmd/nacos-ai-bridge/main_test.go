package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("inference:\n  temperature: 0.5\n"), 0o644)
	os.WriteFile(bad, []byte("inference:\n  temperature: 5\n  max_tokens: 3\n  retry-count: x\n"), 0o644)
	tests := []struct {
		args []string
		code int
		out  []string
	}{
		{[]string{"config", "validate", good}, 0, []string{"ok rev "}},
		{[]string{"config", "validate", bad}, 1, []string{"inference.max_tokens: unknown key; did you mean max-tokens?", `inference.retry-count: "x" is not an integer`}},
		{[]string{"config", "validate", "../../conf/ai-inference-config.yaml"}, 0, []string{"ok rev "}},
		{[]string{"config", "validate", filepath.Join(dir, "missing.yaml")}, 1, nil},
		{[]string{"config", "validate"}, 2, nil},
		{[]string{"config"}, 2, nil},
		{[]string{"config", "--help"}, 0, []string{"Usage: nacos-ai-bridge config validate"}},
		{[]string{"frobnicate"}, 2, nil},
		{[]string{"version"}, 0, []string{"nacos-ai-bridge "}},
		{[]string{"version", "--help"}, 0, []string{"Usage: nacos-ai-bridge version"}},
		{[]string{"--help"}, 0, []string{"nacos-ai-bridge run", "instances SERVICE"}},
		{[]string{"run", "--help"}, 0, nil},
		{[]string{"instances", "--help"}, 0, nil},
		{[]string{"pick", "--help"}, 0, nil},
		{nil, 2, nil},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(tt.args, &out, &errb)
		if code != tt.code {
			t.Fatalf("%v: exit %d, want %d (stdout %q, stderr %q)", tt.args, code, tt.code, out.String(), errb.String())
		}
		for _, w := range tt.out {
			if !strings.Contains(out.String(), w) {
				t.Fatalf("%v: stdout %q lacks %q", tt.args, out.String(), w)
			}
		}
	}
}
