package geminicli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	apiOut := func(code int, msg string) *Output {
		o, err := ParseOutput([]byte(`{"session_id":"x","error":{"type":"Error","message":` + quote(msg) + `,"code":` + itoa(code) + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return &o
	}
	cases := []struct {
		name   string
		exit   int
		out    *Output
		stderr string
		resume string
		kind   backend.Kind
		status int
		want   []string
	}{
		{"auth", 41, nil, "Please set an Auth method in your settings.json", "", backend.KindAuth, 0, []string{"exit 41", "GEMINI_API_KEY", "2026-06-18", "Please set an Auth method"}},
		{"bad session", 42, nil, "Error resuming session: Invalid session identifier \"abc\".\n  Searched for sessions in /h", "b9aadb6c-5aca-4c65-b929-02b095cc2b94", backend.KindSession, 0, []string{"could not resume session", "b9aadb6c-5aca-4c65-b929-02b095cc2b94", "/work", "Invalid session identifier"}},
		{"no input", 42, nil, "No input provided via stdin.", "", backend.KindInput, 0, []string{"exit 42", "No input provided"}},
		{"config", 52, nil, "Error in settings", "", backend.KindConfig, 0, []string{"exit 52"}},
		{"turns", 53, nil, "", "", backend.KindTurnLimit, 0, []string{"maxSessionTurns", "chat"}},
		{"tool", 54, nil, "", "", backend.KindTool, 0, []string{"exit 54"}},
		{"untrusted", 55, nil, "", "", backend.KindUntrusted, 0, []string{"/work", "--skip-trust", "GEMINI_CLI_TRUST_WORKSPACE"}},
		{"cancelled", 130, nil, "", "", backend.KindCancelled, 0, []string{"exit 130"}},
		{"400 json", 144, apiOut(400, `{"error":{"code":400,"message":"fake error 400","status":"X"}}`), "", "", backend.KindAPI, 400, []string{"Gemini API error 400 Bad Request", "fake error 400", "exit 144"}},
		{"429 exit only", 173, nil, "", "", backend.KindAPI, 429, []string{"429", "quota"}},
		{"500", 244, apiOut(500, "internal"), "", "", backend.KindAPI, 500, []string{"500", "internal", "try again later"}},
		{"error on exit 0", 0, apiOut(500, "internal"), "", "", backend.KindAPI, 500, []string{"500", "internal", "exit 0"}},
		{"255 exit only", 255, nil, "", "", backend.KindFailed, 0, []string{"exited with code 255", "neither one of the Gemini CLI's exit codes"}},
		{"255 code 255", 255, &Output{Error: &OutputError{Type: "Error", Message: "boom", Code: []byte("255")}}, "", "", backend.KindFailed, 0, []string{"exited with code 255", "boom"}},
		{"255 code -1", 255, &Output{Error: &OutputError{Type: "Error", Message: "boom", Code: []byte("-1")}}, "", "", backend.KindFailed, 0, []string{"exited with code 255", "boom"}},
		{"511 json", 255, apiOut(511, "proxy sign-in"), "", "", backend.KindAPI, 511, []string{"Gemini API error 511", "proxy sign-in", "exit 255"}},
		{"crash", 1, nil, "    at x (y.js:1:1)\nTypeError: boom\n", "", backend.KindFailed, 0, []string{"exited with code 1", "TypeError: boom"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := Classify(c.exit, c.out, c.stderr, c.resume, "/work")
			if e.Kind != c.kind || e.Status != c.status || !e.Exited || e.ExitCode != c.exit || !e.Ran {
				t.Fatalf("got kind %s status %d exit %v %d ran %v", e.Kind, e.Status, e.Exited, e.ExitCode, e.Ran)
			}
			for _, w := range c.want {
				if !strings.Contains(e.Reason, w) {
					t.Errorf("reason %q lacks %q", e.Reason, w)
				}
			}
		})
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

func FuzzClassify(f *testing.F) {
	f.Add(144, realFailure)
	f.Add(41, "Please set an Auth method")
	f.Add(1, "")
	f.Fuzz(func(t *testing.T, exit int, stderr string) {
		var out *Output
		if o, err := ParseOutput([]byte(stderr)); err == nil {
			out = &o
		}
		e := Classify(exit, out, stderr, "", "/w")
		if e.Reason == "" || e.Kind == "" {
			t.Fatalf("empty classification for exit %d", exit)
		}
	})
}

// TestErrorUnwrap: a *backend.Error is found through wrapping, and wraps
// its cause, so that callers can test for a cancel or a timeout (package
// acp checks its own errors the same way).
func TestErrorUnwrap(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err   *backend.Error
		kind  backend.Kind
		cause error
	}{
		{CancelledError("cancelled", context.Canceled), backend.KindCancelled, context.Canceled},
		{CallTimeoutError(0), backend.KindTimeout, context.DeadlineExceeded},
		{NotFoundError("not found", exec.ErrNotFound), backend.KindNotFound, exec.ErrNotFound},
		{OutputTooBigError(10), backend.KindOutputTooBig, errOutputLimit},
	}
	for _, c := range cases {
		wrapped := fmt.Errorf("calling: %w", c.err)
		var e *backend.Error
		if !errors.As(wrapped, &e) || e != c.err || e.Kind != c.kind {
			t.Errorf("%s: errors.As found %v", c.kind, e)
		}
		if c.cause != nil && !errors.Is(wrapped, c.cause) {
			t.Errorf("%s: does not wrap %v", c.kind, c.cause)
		}
	}
	if errors.Is(cases[0].err, context.DeadlineExceeded) || errors.Is(cases[1].err, context.Canceled) {
		t.Error("a cancel and a timeout are confused")
	}
}
