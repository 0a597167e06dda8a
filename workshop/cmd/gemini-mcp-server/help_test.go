package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHelpGoesToStdout: help that was asked for is the command's output
// (stdout, exit 0), names every tool and shows sizes as people write them;
// a mistake goes to stderr only, with exit 2.
func TestHelpGoesToStdout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"doctor", "--help"}} {
		cmd := e.command(args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\nstderr: %s", args, err, stderr.String())
		}
		out := stdout.String()
		if stderr.Len() != 0 {
			t.Errorf("%v wrote to stderr: %q", args, stderr.String())
		}
		for _, want := range []string{"Usage:", "chat-page", "(default 1MiB)", "(default 32MiB)", "(default 700MiB)", "(default 5m)", "-max-prompt-bytes size", "-timeout duration"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: help lacks %q:\n%s", args, want, out)
			}
		}
		for _, bad := range []string{"(default 0)", "1048576", "33554432", "-max-prompt-bytes value"} {
			if strings.Contains(out, bad) {
				t.Errorf("%v: help shows %q", args, bad)
			}
		}
	}
	cmd := e.command("--no-such-flag")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	if cmd.ProcessState.ExitCode() != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "no-such-flag") || !strings.Contains(stderr.String(), "--help") {
		t.Fatalf("bad flag: exit %d, stdout %q, stderr %q", cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
	}
}

// TestHelpListsEveryToolArgument: --help's tool summary names every tool
// the server lists and, in braces after it, exactly the arguments of its
// input schema, so that the summary cannot fall behind the tools.
func TestHelpListsEveryToolArgument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out, err := e.command("--help").Output()
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	help := string(out)
	if i := strings.Index(help, "\nFlags"); i >= 0 {
		help = help[:i] // the tools come before the flags
	}
	summary := map[string][]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s+([a-z-]+) \{([^}]*)\}`).FindAllStringSubmatch(help, -1) {
		args := strings.FieldsFunc(m[2], func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
		slices.Sort(args)
		summary[m[1]] = args
	}
	cs := connect(t, e.command("--project-root", e.work))
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		want := slices.Sorted(maps.Keys(schema.Properties))
		got, ok := summary[tool.Name]
		if !ok {
			t.Errorf("--help does not list tool %s {%s}", tool.Name, strings.Join(want, ", "))
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("--help lists %s {%s}, its schema has {%s}", tool.Name, strings.Join(got, ", "), strings.Join(want, ", "))
		}
		delete(summary, tool.Name)
	}
	for name := range summary {
		t.Errorf("--help lists %s, which the server does not serve", name)
	}
}
