package geminitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FakeEnv is the environment that gives one test's fake CLI its own
// session store (home, see [EnvHome]), its invocation log (log, see
// [EnvLog]; "" for none) and a self-timeout (see [EnvSelfTimeout]; 0 for
// [DefaultSelfTimeout]), as KEY=VALUE entries to append to a process's
// environment. Every suite that runs the fake sets it up here, so that a
// new setting reaches them all.
func FakeEnv(home, log string, selfTimeout time.Duration) []string {
	env := []string{EnvHome + "=" + home}
	if log != "" {
		env = append(env, EnvLog+"="+log)
	}
	if selfTimeout > 0 {
		env = append(env, EnvSelfTimeout+"="+selfTimeout.String())
	}
	return env
}

// suspicious are what a Go process writes on stderr when something went
// wrong that its exit code may not show: a data race (the race detector
// exits 66 only at the end), a panic or fatal error, and an exec.Cmd that
// was started and never waited for (reported with GODEBUG=execwait=2).
var suspicious = []string{"DATA RACE", "panic:", "leaked exec.Cmd", "fatal error:"}

// Suspicious returns the markers of trouble found in a server's stderr,
// or nil.
func Suspicious(stderr string) []string {
	var found []string
	for _, bad := range suspicious {
		if strings.Contains(stderr, bad) {
			found = append(found, bad)
		}
	}
	return found
}

// TB is the part of testing.TB that CheckStderr uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// CheckStderr fails the test for every marker of trouble in stderr, the
// standard error of what (a process's name in the message).
func CheckStderr(t TB, what, stderr string) {
	t.Helper()
	for _, bad := range Suspicious(stderr) {
		t.Errorf("%s stderr contains %q", what, bad)
	}
}

// SetSetting sets key in the Gemini CLI's user settings under home
// (home/.gemini/settings.json), keeping the other keys.
func SetSetting(t interface {
	Helper()
	Fatalf(format string, args ...any)
}, home, key string, value any) {
	t.Helper()
	path := filepath.Join(home, ".gemini", "settings.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var settings map[string]any
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	settings[key] = value
	if b, err = json.MarshalIndent(settings, "", "  "); err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatalf("%v", err)
	}
}
