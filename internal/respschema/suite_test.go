package respschema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// suiteDir is the JSON-Schema-Test-Suite files (draft 2020-12 and
// draft-07) that github.com/google/jsonschema-go, a dependency, carries
// in its module.
func suiteDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/jsonschema-go").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "jsonschema", "testdata")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the test suite: %v", err)
	}
	return dir
}

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// TestOfficialSuite runs the JSON Schema test suite: every schema this
// package compiles gives every case the outcome the suite expects, and
// the only schemas it refuses are those that refer outside themselves
// (the suite's remote references) or use dynamic references, which
// neither the Gemini API nor this server takes.
func TestOfficialSuite(t *testing.T) {
	groups, cases, refused := 0, 0, 0
	for _, d := range []string{"draft2020-12", "draft7"} {
		files, err := filepath.Glob(filepath.Join(suiteDir(t), d, "*.json"))
		if err != nil || len(files) < 30 {
			t.Fatalf("%s: %d files (%v)", d, len(files), err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var gs []suiteGroup
			if err := json.Unmarshal(raw, &gs); err != nil {
				t.Fatal(f, err)
			}
			for _, g := range gs {
				name := d + "/" + filepath.Base(f) + ": " + g.Description
				schema := bytes.TrimSpace(g.Schema)
				if d == "draft7" && schema[0] == '{' && !bytes.Contains(schema, []byte(`"$schema"`)) {
					// The draft-07 files leave $schema out.
					rest := bytes.TrimSpace(schema[1:])
					sep := ","
					if rest[0] == '}' {
						sep = ""
					}
					schema = append([]byte(`{"$schema":"http://json-schema.org/draft-07/schema#"`+sep), rest...)
				}
				s, err := Compile(schema)
				if err != nil {
					refused++
					var e *Error
					if !errors.As(err, &e) || e.Kind != Unsupported ||
						!(strings.Contains(e.Msg, "points outside the schema") || strings.Contains(e.Msg, "dynamic references")) {
						t.Errorf("%s: refused: %v", name, err)
					}
					continue
				}
				groups++
				for _, tc := range g.Tests {
					cases++
					dec := json.NewDecoder(bytes.NewReader(tc.Data))
					dec.UseNumber()
					var v any
					if err := dec.Decode(&v); err != nil {
						t.Fatal(err)
					}
					err := s.Validate(context.Background(), v)
					if (err == nil) != tc.Valid || (err != nil && !IsInvalid(err)) {
						t.Errorf("%s: %s: want valid=%v, got %v", name, tc.Description, tc.Valid, err)
					}
				}
			}
		}
	}
	t.Logf("%d schemas and %d cases checked; %d schemas refused (remote or dynamic references)", groups, cases, refused)
	if groups < 500 || cases < 1800 {
		t.Errorf("only %d schemas and %d cases ran", groups, cases)
	}
}
