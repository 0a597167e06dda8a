package geminitest

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// WorkDir is a new temporary directory with its symlinks resolved, as the
// CLI reports a working directory (on macOS, /var is /private/var).
func WorkDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Invocations is ReadLog for a test: a log that cannot be read fails it.
func Invocations(t testing.TB, log string) []Invocation {
	t.Helper()
	inv, err := ReadLog(log)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// Context is a call's context in a test: it ends with the test, and after
// 30 s as a guard against a hang (not a timing assumption).
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestFakeEnv is FakeEnv for one test: the fake gets a private home and
// invocation log under the test's temporary directory (and a 30 s
// self-timeout), plus extra variables. It returns the environment and the
// log's path.
func TestFakeEnv(t testing.TB, extra ...string) (env []string, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "invocations.jsonl")
	return append(FakeEnv(filepath.Join(dir, "home"), log, 30*time.Second), extra...), log
}
