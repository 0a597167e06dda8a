package mcphost

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
)

// stopGrace is how long a stdio server has to exit after its stdin is
// closed, and then after an interrupt, before its process group is
// killed.
const stopGrace = 2 * time.Second

// stdioTransport starts a server's command through proc, in a process
// group of its own (npx and uvx servers fork), so that closing the
// connection ends every process it made; the go-sdk's CommandTransport
// signals the first process only. Its stderr goes to the log.
type stdioTransport struct {
	cfg      ServerConfig
	env      []string
	log      *slog.Logger
	overflow *atomic.Bool
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stderr := &stderrLines{log: t.log.With("mcp_server", t.cfg.Name)}
	c, err := proc.Start(proc.Program{Path: t.cfg.Command, Args: t.cfg.Args, Dir: t.cfg.Cwd, Env: t.env, Stderr: stderr})
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", t.cfg.Command, err)
	}
	p := &stdioProcess{child: c, stderr: stderr}
	// The SDK bounds a line too (16 MiB by default); lineLimitReader stops
	// first, at MaxMessageBytes, with an error that names the limit.
	return (&mcp.IOTransport{Reader: stdoutCloser{p, &lineLimitReader{r: c.Stdout, overflow: t.overflow}}, Writer: p, MaxLineLength: 2 * MaxMessageBytes}).Connect(ctx)
}

// stdioProcess is a running stdio server: writing goes to its stdin,
// closing stops it (stdin closed, then an interrupt, then a kill of the
// whole group, each after stopGrace).
type stdioProcess struct {
	child  *proc.Child
	stderr *stderrLines
	once   sync.Once
}

func (p *stdioProcess) Write(b []byte) (int, error) { return p.child.Stdin.Write(b) }

func (p *stdioProcess) Close() error {
	p.once.Do(func() {
		p.child.Stop(stopGrace, stopGrace)
		p.stderr.flush()
	})
	return nil
}

// stdoutCloser is the reading side: the SDK closes it first, and the
// process is stopped by the writing side's Close right after.
type stdoutCloser struct {
	p *stdioProcess
	r io.Reader
}

func (s stdoutCloser) Read(b []byte) (int, error) { return s.r.Read(b) }
func (s stdoutCloser) Close() error               { return nil }

// stderrLineMax is the longest stderr line that is logged; a longer one
// ends the logging of the server's stderr, which is then only drained, so
// that the server never blocks on a full pipe.
const stderrLineMax = 64 << 10

// stderrLines logs each line a server writes on stderr, clipped. It is
// written to by one goroutine at a time (proc's copy, then flush).
type stderrLines struct {
	log  *slog.Logger
	buf  []byte // the line begun
	done bool   // a line passed stderrLineMax
}

func (w *stderrLines) Write(b []byte) (int, error) {
	n := len(b)
	for !w.done && len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.buf = append(w.buf, b...)
			break
		}
		w.buf = append(w.buf, b[:i]...)
		b = b[i+1:]
		w.line()
	}
	if len(w.buf) > stderrLineMax {
		w.done, w.buf = true, nil
	}
	return n, nil
}

// flush logs the last line, when it has no newline.
func (w *stderrLines) flush() {
	if !w.done && len(w.buf) > 0 {
		w.line()
	}
}

func (w *stderrLines) line() {
	if len(w.buf) > stderrLineMax {
		w.done, w.buf = true, nil
		return
	}
	line := string(bytes.TrimSuffix(w.buf, []byte{'\r'}))
	w.buf = w.buf[:0]
	if len(line) > 2000 {
		line = line[:2000] + "…"
	}
	w.log.Debug("MCP server stderr", "line", line)
}

// Environment variables a stdio server does not inherit from this server,
// by the Gemini CLI's redaction rules (sanitizeEnvironment): the API key
// this server holds must not leak to every tool it runs. Beyond the CLI's
// rules, this server's own settings (GEMINI_MCP_*: the store's URL, the
// MCP configuration) and any value holding a secret the redactor knows or
// a URL with a password are not passed on either. The server's own env
// settings are added after, unfiltered.
var (
	alwaysAllowed = map[string]bool{"PATH": true, "HOME": true, "LANG": true, "SHELL": true, "TMPDIR": true, "USER": true, "LOGNAME": true, "TERM": true, "COLORTERM": true,
		"SYSTEMROOT": true, "COMSPEC": true, "PATHEXT": true, "WINDIR": true, "TEMP": true, "TMP": true, "USERPROFILE": true, "SYSTEMDRIVE": true}
	neverAllowed = map[string]bool{"CLIENT_ID": true, "DB_URI": true, "CONNECTION_STRING": true, "AWS_DEFAULT_REGION": true, "AZURE_CLIENT_ID": true, "AZURE_TENANT_ID": true,
		"SLACK_WEBHOOK_URL": true, "TWILIO_ACCOUNT_SID": true, "DATABASE_URL": true, "GOOGLE_CLOUD_PROJECT": true, "GOOGLE_CLOUD_ACCOUNT": true, "FIREBASE_PROJECT_ID": true}
	secretName  = regexp.MustCompile(`(?i)TOKEN|SECRET|PASSWORD|PASSWD|KEY|AUTH|CREDENTIAL|CREDS|PRIVATE|CERT`)
	secretValue = regexp.MustCompile(`(?i)-----BEGIN (RSA|OPENSSH|EC|PGP) PRIVATE KEY-----|-----BEGIN CERTIFICATE-----|[a-z][a-z0-9+.-]*://[^:/?#\s@]*:[^@\s]+@|(ghp|gho|ghu|ghs|ghr|github_pat)_[a-zA-Z0-9_]{36,}|AIzaSy[a-zA-Z0-9_\\-]{33}|AKIA[A-Z0-9]{16}|eyJ[a-zA-Z0-9_-]*\.[a-zA-Z0-9_-]*\.[a-zA-Z0-9_-]*|(s|r)k_(live|test)_[0-9a-zA-Z]{24}|xox[abpr]-[a-zA-Z0-9-]+`)
)

// serverEnv is the environment of a stdio server: this process's, less
// secrets, plus the server's env setting.
func serverEnv(parent []string, extra map[string]string, red *redact.Redactor) []string {
	var env []string
	for _, kv := range parent {
		k, v, _ := strings.Cut(kv, "=")
		if withheld(k, v) || (v != "" && red.Contains(v)) {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range extra {
		env = proc.SetEnv(env, k, v)
	}
	return env
}

// withheld says whether a variable of this process is kept from a stdio
// server.
func withheld(key, value string) bool {
	up := strings.ToUpper(key)
	if strings.HasPrefix(up, "GEMINI_CLI_") {
		return false
	}
	if strings.HasPrefix(up, "GEMINI_MCP_") {
		return true
	}
	if value != "" && secretValue.MatchString(value) {
		return true
	}
	if strings.HasPrefix(up, "GIT_CONFIG_") || alwaysAllowed[up] {
		return false
	}
	return neverAllowed[up] || secretName.MatchString(up)
}
