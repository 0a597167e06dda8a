package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	r := New("s3cr3t-value", "short", `quo"te-secret`)
	for in, want := range map[string]string{
		"the s3cr3t-value here":                          "the [redacted] here",
		"short stays":                                    "short stays",
		`json "quo\"te-secret"`:                          `json "[redacted]"`,
		"postgres://admin:pw@db/app":                     "postgres://admin:[redacted]@db/app",
		"redis://:pw@127.0.0.1:6379/0":                   "redis://:[redacted]@127.0.0.1:6379/0",
		"https://h/x?key=AIza123&q=1&access_token=abc":   "https://h/x?key=[redacted]&q=1&access_token=[redacted]",
		"https://user@h/path?page=2":                     "https://user@h/path?page=2",
		"url-escaped s3cr3t-value and s3cr3t%2Dvalue ok": "url-escaped [redacted] and s3cr3t%2Dvalue ok",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var none *Redactor
	if got := none.String("a://u:p@h"); got != "a://u:[redacted]@h" {
		t.Errorf("a nil Redactor: %q", got)
	}
	if got := URLSecrets("x redis://:pw%40x@h y https://h/?token=t0k"); strings.Join(got, ",") != "pw%40x,pw@x,t0k" {
		t.Errorf("URLSecrets: %q", got)
	}
	if got := EnvSecrets([]string{"GEMINI_API_KEY=k1", "PATH=/bin", "GEMINI_MCP_STORE=redis://:pw@h/0", "GEMINI_CLI_X_TOKEN=no", "GEMINI_MCP_MAX_CONTEXT_TOKENS=1000000", "X_AUTH=true"}); strings.Join(got, ",") != "k1,pw" {
		t.Errorf("EnvSecrets: %q", got)
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	r := New("topsecretvalue")
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil), r))
	if Of(log.Handler()) != r {
		t.Error("Of does not find the Redactor")
	}
	log.With("ctx", "topsecretvalue").WithGroup("g").Info("msg topsecretvalue", "err", errors.New("failed at https://u:pw@h"), "n", 3, slog.Group("sub", "v", "topsecretvalue"))
	out := buf.String()
	if strings.Contains(out, "topsecretvalue") || strings.Contains(out, ":pw@") || !strings.Contains(out, "n=3") || strings.Count(out, Mask) != 4 {
		t.Errorf("log line %s", out)
	}
}
