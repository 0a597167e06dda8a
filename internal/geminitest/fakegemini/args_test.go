package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	for _, flag := range []string{"-v", "--version"} {
		if got := s.run(flag).mustSucceed(t).stdout; got != geminitest.DefaultVersion+"\n" {
			t.Errorf("%s printed %q, want %q", flag, got, geminitest.DefaultVersion+"\n")
		}
	}
	got := s.with(geminitest.EnvVersion + "=0.1.2").run("--version").mustSucceed(t).stdout
	if got != "0.1.2\n" {
		t.Errorf("--version with %s set printed %q", geminitest.EnvVersion, got)
	}
}

// TestFlagForms checks that every flag the project relies on is accepted in each spelling yargs
// allows, and that values reach the answer.
func TestFlagForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantModel  string
		wantPrompt string
	}{
		{"short model", []string{"-m", "m1", "hi"}, "m1", "hi"},
		{"long model", []string{"--model", "m2", "hi"}, "m2", "hi"},
		{"model with =", []string{"--model=m3", "hi"}, "m3", "hi"},
		{"short model with =", []string{"-m=m4", "hi"}, "m4", "hi"},
		{"camelCase flag", []string{"--outputFormat", "text", "hi"}, geminitest.DefaultModel, "hi"},
		{"short prompt", []string{"-p", "from p"}, geminitest.DefaultModel, "from p"},
		{"long prompt", []string{"--prompt", "from prompt"}, geminitest.DefaultModel, "from prompt"},
		{"prompt with = may start with a dash", []string{"--prompt=-h x"}, geminitest.DefaultModel, "-h x"},
		{"empty -p does not conflict with a positional", []string{"-p", "", "pos"}, geminitest.DefaultModel, "pos"},
		{"positional words are joined", []string{"two", "words"}, geminitest.DefaultModel, "two words"},
		{"prompt after flags", []string{"-o", "text", "-m", "m5", "last"}, "m5", "last"},
		{"bundled booleans", []string{"-sy", "hi"}, geminitest.DefaultModel, "hi"},
		{"every other flag", []string{
			"--approval-mode=auto_edit", "--sandbox", "--skip-trust",
			"--include-directories", "/a", "--include-directories=/b",
			"-e", "ext1", "--extensions", "ext2",
			"--allowed-mcp-server-names", "s1", "--allowed-mcp-server-names=s2",
			"--no-sandbox", "--sandbox=false", "hi",
		}, geminitest.DefaultModel, "hi"},
		{"yolo", []string{"--yolo", "hi"}, geminitest.DefaultModel, "hi"},
		{"approval mode plan", []string{"--approval-mode", "plan", "hi"}, geminitest.DefaultModel, "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			got := s.run(tt.args...).mustSucceed(t).answerLine(t)
			want := geminitest.Answer(1, tt.wantModel, "", tt.wantPrompt)
			if got != want {
				t.Errorf("answer\n got %s\nwant %s", got, want)
			}
			if argv := s.lastInvocation().Argv; !slices.Equal(argv, tt.args) {
				t.Errorf("logged argv %q, want %q", argv, tt.args)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantStderr string
	}{
		{"unknown long flag", nil, []string{"--bogus-flag", "hi"}, "Unknown arguments: bogus-flag, bogusFlag"},
		{"unknown short flag", nil, []string{"-x", "hi"}, "Unknown argument: x"},
		{"help is not a flag the fake knows", nil, []string{"--help"}, "Unknown argument: help"},
		{"--session-id on an older CLI", []string{geminitest.EnvNoSessionIDFlag + "=1"},
			[]string{"--session-id", "0b8d7a4e-8a36-4d4a-9a43-3e6f6c1e2f10", "hi"},
			"Unknown arguments: session-id, sessionId"},
		{"prompt flag and positional", nil, []string{"-p", "a", "b"},
			"Cannot use both a positional prompt and the --prompt (-p) flag together"},
		{"dash value is not taken", nil, []string{"-p", "-h x"}, "Not enough arguments following: p"},
		{"missing value", nil, []string{"hi", "-m"}, "Not enough arguments following: m"},
		{"bad output format", nil, []string{"-o", "xml", "hi"},
			`Argument: output-format, Given: "xml", Choices: "text", "json", "stream-json"`},
		{"bad approval mode", nil, []string{"--approval-mode=never", "hi"}, "Argument: approval-mode"},
		{"yolo and approval mode", nil, []string{"-y", "--approval-mode", "yolo", "hi"},
			"Cannot use both --yolo (-y) and --approval-mode together"},
		{"resume and session id", nil, []string{"-r", "latest", "--session-id", "0b8d7a4e-8a36-4d4a-9a43-3e6f6c1e2f10", "hi"},
			"Cannot use both --resume (-r) and --session-id together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t).with(tt.env...)
			r := s.run(tt.args...).mustFail(t, 1, tt.wantStderr)
			if r.stdout != "" {
				t.Errorf("stdout is %q, want it empty", r.stdout)
			}
			if !strings.Contains(r.stderr, "Usage: gemini") {
				t.Errorf("stderr has no help text:\n%s", r.stderr)
			}
			// A run that fails on its flags is logged too, so tests can see what a wrapper passed.
			if argv := s.lastInvocation().Argv; !slices.Equal(argv, tt.args) {
				t.Errorf("logged argv %q, want %q", argv, tt.args)
			}
		})
	}
}

func TestSessionIDFlagWorksByDefault(t *testing.T) {
	t.Parallel()
	s := newSandbox(t).with(geminitest.EnvNoSessionIDFlag + "=0")
	const id = "0b8d7a4e-8a36-4d4a-9a43-3e6f6c1e2f10"
	out := s.run("-o", "json", "--session-id", id, "hi").mustSucceed(t).jsonOut(t)
	if out["session_id"] != id {
		t.Errorf("session_id %v, want %s", out["session_id"], id)
	}
}

// TestDoubleDashDropsTheRest mirrors the measured CLI: "--" does not smuggle a prompt that starts
// with a dash, it loses it.
func TestDoubleDashDropsTheRest(t *testing.T) {
	t.Parallel()
	newSandbox(t).run("--", "-h x").mustFail(t, 42, "No input provided via stdin")
}

func TestParseArgsBareResumeMeansLatest(t *testing.T) {
	for _, args := range [][]string{{"-r"}, {"--resume"}, {"-r", "-o", "json"}} {
		opts, err := parseArgs(args, false)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if !opts.hasResume || opts.resume != "latest" {
			t.Errorf("%q: resume %q (set %v), want latest", args, opts.resume, opts.hasResume)
		}
	}
}

func TestParseArgsRepeatableFlags(t *testing.T) {
	opts, err := parseArgs([]string{
		"--include-directories", "a", "--include-directories=b",
		"-e", "x", "-e=y", "--allowed-mcp-server-names", "s", "-m", "first", "-m", "second",
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opts.includes, []string{"a", "b"}) || !slices.Equal(opts.extensions, []string{"x", "y"}) ||
		!slices.Equal(opts.mcpServers, []string{"s"}) || opts.model != "second" {
		t.Errorf("parsed %+v", opts)
	}
}
