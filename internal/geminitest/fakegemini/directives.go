package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// directives are the instructions for misbehaving that a test writes into a prompt.
type directives struct {
	exitCode    int // 0 when absent
	noSession   bool
	empty       bool
	badJSON     bool
	hang        bool
	ignoreTerm  bool
	child       bool
	sleep       time.Duration
	stdoutBytes int // -1 when absent
	stderrBytes int
	signal      int // 0 when absent

	// The directives below only work in --acp mode.
	tool       string // the tool name of [[tool:NAME]], "" when absent
	permission bool
	crash      bool
	holdEnd    bool
	chunks     int // 0 when absent
	allocMB    int
	stop       string // the stopReason of [[stop:REASON]], "" when absent
}

// numericDirective matches the directives that carry a number.
var numericDirective = regexp.MustCompile(`\[\[(exit|sleep|stdout|stderr|chunks|alloc|signal):(\d+)\]\]`)

// toolDirective matches [[tool:NAME]].
var toolDirective = regexp.MustCompile(`\[\[tool:([A-Za-z0-9_.-]+)\]\]`)

// stopDirective matches [[stop:REASON]].
var stopDirective = regexp.MustCompile(`\[\[stop:([a-z_]+)\]\]`)

// parseDirectives finds the directives anywhere in prompt. Of a numeric directive given twice the
// first counts; [[exit:N]] counts only for N in 1..255, the range of exit codes.
func parseDirectives(prompt string) directives {
	d := directives{
		noSession:   strings.Contains(prompt, "[[nosession]]"),
		empty:       strings.Contains(prompt, "[[empty]]"),
		badJSON:     strings.Contains(prompt, "[[badjson]]"),
		hang:        strings.Contains(prompt, "[[hang]]"),
		ignoreTerm:  strings.Contains(prompt, "[[ignoreterm]]"),
		child:       strings.Contains(prompt, "[[child]]"),
		stdoutBytes: -1,
		permission:  strings.Contains(prompt, "[[permission]]"),
		crash:       strings.Contains(prompt, "[[crash]]"),
		holdEnd:     strings.Contains(prompt, "[[holdend]]"),
	}
	if m := toolDirective.FindStringSubmatch(prompt); m != nil {
		d.tool = m[1]
	}
	if m := stopDirective.FindStringSubmatch(prompt); m != nil {
		d.stop = m[1]
	}
	seen := map[string]bool{}
	for _, m := range numericDirective.FindAllStringSubmatch(prompt, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil || seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		switch m[1] {
		case "exit":
			if n >= 1 && n <= 255 {
				d.exitCode = n
			}
		case "sleep":
			d.sleep = time.Duration(n) * time.Millisecond
		case "stdout":
			d.stdoutBytes = n
		case "stderr":
			d.stderrBytes = n
		case "chunks":
			d.chunks = n
		case "alloc":
			d.allocMB = n
		case "signal":
			d.signal = n
		}
	}
	return d
}

// blocks reports whether the run never answers.
func (d directives) blocks() bool {
	return d.hang || d.ignoreTerm || d.child
}

// ignoreSignals makes SIGINT and SIGTERM harmless, like a CLI stuck in a handler that never
// finishes. It catches them rather than using signal.Ignore so that it can say on stderr that a
// signal arrived: a test can then wait for that line instead of sleeping and hoping.
func ignoreSignals() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		for sig := range signals {
			fmt.Fprintf(os.Stderr, "%s %s\n", ignoredLine, sig)
		}
	}()
	fmt.Fprintln(os.Stderr, ignoringLine)
}

// startChild starts the fake again as a child that only waits to be killed. The child stays in
// the fake's process group and inherits its stdout and stderr, like the node process the real CLI
// relaunches itself as: killing only the parent leaves the pipes open, killing the group closes them.
func startChild() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envChild+"=1")
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("fake-gemini: starting the child: %w", err)
	}
	// The parent never waits for the child: it hangs until it is killed or times out.
	pid := cmd.Process.Pid
	cmd.Process.Release()
	fmt.Fprintf(os.Stderr, "%s %d\n", childLine, pid)
	return pid, nil
}

// variedText returns n bytes of text that never repeats a line, using line as a format for a
// counter. The real CLI's loop detector blanks answers that repeat themselves, so large test
// output must look varied, and exact sizes let tests check caps to the byte.
func variedText(n int, line string) string {
	var b strings.Builder
	b.Grow(n + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, line, i)
	}
	return b.String()[:n]
}

// writeNoise writes n bytes of varied noise to w.
func writeNoise(w io.Writer, n int) {
	io.WriteString(w, variedText(n, "fake-gemini stderr noise line %d\n"))
}
