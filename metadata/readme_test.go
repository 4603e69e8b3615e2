package metadata

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEDocumentsSchema keeps the README's schema table, which Java and
// Python readers rely on, in step with Fields.
func TestREADMEDocumentsSchema(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `") && strings.Count(line, "|") == 4 {
			key := strings.Trim(strings.TrimSpace(strings.Split(line, "|")[1]), "`")
			if isKnown(key) {
				rows = append(rows, line)
			}
		}
	}
	if len(rows) != len(Fields) {
		t.Fatalf("README schema table has %d known keys, schema has %d", len(rows), len(Fields))
	}
	for i, f := range Fields {
		want := "| `" + f.Key + "` | " + f.Value + " | " + f.Meaning + " |"
		if rows[i] != want {
			t.Fatalf("README row %d:\n got %s\nwant %s", i, rows[i], want)
		}
	}
}
