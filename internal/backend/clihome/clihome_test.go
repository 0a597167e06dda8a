package clihome

import (
	"encoding/json"
	"errors"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// TestHome: GEMINI_CLI_HOME, else HOME, else the user database's home
// directory; an empty variable counts as unset. The doctor's form of an
// environment (a getenv) and a process's (a list, the last entry winning)
// give the same directory.
func TestHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no home directory in the user database: %v", err)
	}
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"GEMINI_CLI_HOME", []string{"HOME=/h", "GEMINI_CLI_HOME=/c"}, "/c"},
		{"HOME", []string{"HOME=/h"}, "/h"},
		{"empty GEMINI_CLI_HOME", []string{"GEMINI_CLI_HOME=", "HOME=/h"}, "/h"},
		{"last entry wins", []string{"HOME=/a", "GEMINI_CLI_HOME=/c", "HOME=/h", "GEMINI_CLI_HOME="}, "/h"},
		{"neither", []string{"PATH=/bin"}, u.HomeDir},
		{"empty HOME", []string{"HOME="}, u.HomeDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			vars := map[string]string{}
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = v
			}
			doctor := Dir(func(k string) string { return vars[k] })
			process := Dir(Getenv(c.env))
			if want := filepath.Join(c.want, ".gemini"); doctor != want || process != want {
				t.Fatalf("Dir from a getenv %q, from an environment list %q, want %q", doctor, process, want)
			}
		})
	}
}

func TestGetenvPrefix(t *testing.T) {
	get := Getenv([]string{"XHOME=/x", "HOMEDIR=/d"})
	if v := get("HOME"); v != "" {
		t.Fatalf("HOME read as %q from other variables", v)
	}
}

// TestParseSettings: comments are allowed where the CLI allows them, and
// kept inside strings.
func TestParseSettings(t *testing.T) {
	s, err := ParseSettings([]byte(`{
  // the auth type
  "security": {"auth": {"selectedType": "gemini-api-key /* not a comment */"}},
  /* retention
     off */
  "general": {"sessionRetention": {"enabled": false}} // end
}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Security.Auth.SelectedType != "gemini-api-key /* not a comment */" || s.General.SessionRetention.Enabled == nil || *s.General.SessionRetention.Enabled {
		t.Fatalf("parsed %+v", s)
	}
	if _, err := ParseSettings([]byte(`{"general": // no value`)); err == nil {
		t.Fatal("a broken settings file parsed")
	}
}

// TestStripCommentsKeepsOffsets: a JSON error in a file with comments
// points at the same place as in the file without them.
func TestStripCommentsKeepsOffsets(t *testing.T) {
	in := []byte("{\"a\": 1, /* x */ \"b\": \"//\", // y\n \"c\": ]}")
	out := StripComments(in)
	if len(out) != len(in) {
		t.Fatalf("length %d, want %d", len(out), len(in))
	}
	var v any
	err := json.Unmarshal(out, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) || in[se.Offset-1] != ']' {
		t.Fatalf("error %v does not point at the ']'", err)
	}
	if string(out) != "{\"a\": 1,         \"b\": \"//\",     \n \"c\": ]}" {
		t.Fatalf("stripped: %q", out)
	}
}
