package app

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// TestNewDepsAllowedRoots checks the roots' defaults: the server's cwd
// over HTTP, none on stdio, and the operator's list when given.
func TestNewDepsAllowedRoots(t *testing.T) {
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"stdio", nil, nil},
		{"http", []string{"--http", "127.0.0.1:0"}, []string{cwd}},
		{"explicit", []string{"--http", "127.0.0.1:0", "--allowed-roots", other + "," + cwd}, []string{other, cwd}},
		{"stdio explicit", []string{"--allowed-roots", other}, []string{other}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--cwd", cwd, "--state-dir", t.TempDir(), "--backend", "oneshot"}, c.args...)
			cfg, err := config.Parse("test", "", args, func(string) string { return "" }, io.Discard, configRules())
			if err != nil {
				t.Fatal(err)
			}
			deps, err := NewDeps(context.Background(), cfg, IO{Getenv: func(string) string { return "" }}.env(), slog.New(slog.DiscardHandler), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer deps.Backend.Close()
			defer deps.Store.Close()
			if len(deps.AllowedRoots) != len(c.want) || (c.want == nil) != (deps.AllowedRoots == nil) {
				t.Fatalf("roots %q, want %q", deps.AllowedRoots, c.want)
			}
			for i := range c.want {
				if deps.AllowedRoots[i] != c.want[i] {
					t.Fatalf("roots %q, want %q", deps.AllowedRoots, c.want)
				}
			}
		})
	}
	cfg, err := config.Parse("test", "", []string{"--state-dir", t.TempDir(), "--allowed-roots", filepath.Join(cwd, "missing")}, func(string) string { return "" }, io.Discard, configRules())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewDeps(context.Background(), cfg, IO{Getenv: func(string) string { return "" }}.env(), slog.New(slog.DiscardHandler), nil, nil); err == nil {
		t.Fatal("a missing root was accepted")
	}
}

// TestNewDepsReadsTheGivenEnvironment: the backend is chosen from the
// environment the command was given, not the process's: with an API key
// there and no gemini executable, auto chooses the API backend, and its
// children's nesting mark counts from the given mark.
func TestNewDepsReadsTheGivenEnvironment(t *testing.T) {
	if newAPIBackend == nil {
		t.Skip("this build has no API backend (-tags noapi)")
	}
	vars := map[string]string{"GEMINI_API_KEY": "key-from-the-given-environment", NestedEnv: "1"}
	getenv := func(k string) string { return vars[k] }
	cfg, err := config.Parse("test", "", []string{"--state-dir", t.TempDir(), "--gemini", filepath.Join(t.TempDir(), "no-gemini")}, getenv, io.Discard, configRules())
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	env := IO{Getenv: getenv}.env()
	deps, err := NewDeps(context.Background(), cfg, env, slog.New(slog.NewTextHandler(&logged, nil)), nil, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, logged.String())
	}
	defer deps.Backend.Close()
	defer deps.Store.Close()
	if !strings.Contains(logged.String(), `msg="backend chosen" backend=api`) {
		t.Errorf("the backend was not chosen from the given environment:\n%s", logged.String())
	}
	if got, want := cliOptions(cfg, env).Env, []string{NestedEnv + "=2"}; !slices.Equal(got, want) {
		t.Errorf("the CLI's children are marked %q, want %q", got, want)
	}
}
