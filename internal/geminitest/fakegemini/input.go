package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// invocation is what the fake logs about one run.
type invocation = geminitest.Invocation

// loggedEnv lists the environment variables an invocation records.
var loggedEnv = []string{"GEMINI_SYSTEM_MD", "GEMINI_CLI_NO_RELAUNCH", "GEMINI_MODEL"}

// request is what one run was asked to do.
type request struct {
	prompt     string
	system     string
	directives directives
}

// newInvocation records what can be known about a run before it parses anything.
func newInvocation() (invocation, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return invocation{}, err
	}
	env := map[string]string{}
	for _, name := range loggedEnv {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	return invocation{
		Pid:       os.Getpid(),
		Ppid:      os.Getppid(),
		Pgid:      processGroup(),
		Argv:      append([]string{}, os.Args[1:]...),
		Cwd:       cwd,
		StdinKind: stdinKind(os.Stdin),
		Env:       env,
	}, nil
}

// readInput reads stdin and the system prompt file, assembles the prompt and records all of it
// in inv.
func readInput(opts *options, inv *invocation) (*request, error) {
	stdin, err := readStdin(inv.StdinKind)
	if err != nil {
		return nil, err
	}
	inv.StdinBytes = len(stdin)
	inv.Prompt = assemblePrompt(stdin, opts.promptArg())

	path, system, err := readSystemMd(inv.Cwd)
	inv.SystemMdPath, inv.SystemMd = path, system
	if err != nil {
		return nil, err
	}
	if inv.Prompt == "" {
		return nil, failf(42, "No input provided via stdin. Input can be provided by piping data into gemini or using the --prompt option.")
	}
	return &request{prompt: inv.Prompt, system: system, directives: parseDirectives(inv.Prompt)}, nil
}

// stdinKind tells the null device, a pipe, a regular file and anything else apart, so that tests
// can check what a wrapper connected to the CLI's stdin.
func stdinKind(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return geminitest.StdinOther
	}
	mode := fi.Mode()
	switch {
	case mode.IsRegular():
		return geminitest.StdinFile
	case mode&os.ModeNamedPipe != 0:
		return geminitest.StdinPipe
	case mode&os.ModeCharDevice != 0 && isDevNull(fi):
		return geminitest.StdinDevNull
	default:
		return geminitest.StdinOther
	}
}

// isDevNull reports whether fi describes the null device rather than, say, a terminal.
func isDevNull(fi os.FileInfo) bool {
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

// readStdin reads all of stdin. It does not read a terminal (StdinOther may be one), where the
// real CLI would go interactive and the fake would block.
func readStdin(kind string) ([]byte, error) {
	if kind == geminitest.StdinOther {
		if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return nil, nil
		}
	}
	data, err := io.ReadAll(io.LimitReader(os.Stdin, maxStdin+1))
	if err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	if len(data) > maxStdin {
		// As the real CLI: cut at a character's edge, warn, read no more.
		data = data[:maxStdin]
		for range utf8.UTFMax - 1 {
			if r, n := utf8.DecodeLastRune(data); r != utf8.RuneError || n != 1 {
				break
			}
			data = data[:len(data)-1]
		}
		fmt.Fprintf(os.Stderr, "Warning: stdin input truncated to %d bytes.\n", maxStdin)
	}
	return data, nil
}

// maxStdin is how much of stdin the real CLI reads (0.61.0's
// MAX_STDIN_SIZE).
const maxStdin = 8 << 20

// assemblePrompt puts piped input before the prompt argument, as the real CLI does.
func assemblePrompt(stdin []byte, arg string) string {
	switch {
	case len(stdin) == 0:
		return arg
	case arg == "":
		return string(stdin)
	default:
		return string(stdin) + "\n\n" + arg
	}
}

// readSystemMd reads the system prompt file named by GEMINI_SYSTEM_MD. Like the real CLI it treats
// "0" and "false" as off, "1" and "true" as ./.gemini/system.md, and anything else as a path,
// relative to the working directory, with "~" for the home directory. A missing file is exit 1.
func readSystemMd(cwd string) (path, content string, err error) {
	value := os.Getenv("GEMINI_SYSTEM_MD")
	switch strings.ToLower(value) {
	case "", "0", "false":
		return "", "", nil
	case "1", "true":
		path = filepath.Join(cwd, ".gemini", "system.md")
	default:
		path = expandHome(value)
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return path, "", failf(1, "Error: missing system prompt file '%s'", path)
	}
	return path, string(data), nil
}

// expandHome replaces a leading "~" with the home directory.
func expandHome(path string) string {
	if path != "~" && !strings.HasPrefix(path, "~/") && !strings.HasPrefix(path, `~\`) {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return filepath.Join(home, path[1:])
}

// writeLog appends inv to the invocation log, if there is one. One write per line with O_APPEND
// keeps the lines of concurrent runs whole.
func writeLog(inv invocation) error {
	path := os.Getenv(geminitest.EnvLog)
	if path == "" {
		return nil
	}
	line, err := json.Marshal(inv)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("fake-gemini: opening the invocation log: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("fake-gemini: writing the invocation log: %w", err)
	}
	return nil
}
