package mcphost

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
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

// stdioTransport starts a server's command in a process group of its own
// (npx and uvx servers fork), so that closing the connection ends every
// process it made; the go-sdk's CommandTransport signals the first
// process only. Its stderr goes to the log.
type stdioTransport struct {
	cfg      ServerConfig
	env      []string
	log      *slog.Logger
	overflow *atomic.Bool
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := exec.Command(t.cfg.Command, t.cfg.Args...)
	cmd.Env = t.env
	cmd.Dir = t.cfg.Cwd
	proc.SetGroup(cmd)
	// Plain pipes, not the exec package's: Wait must not depend on a
	// grandchild closing stderr, and the SDK reads stdout on its own.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("starting %s: %w", t.cfg.Command, err)
	}
	p := &stdioProcess{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}), stderrDone: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go func() {
		defer close(p.stderrDone)
		defer errR.Close()
		logStderr(errR, t.log.With("mcp_server", t.cfg.Name))
	}()
	// The SDK bounds a line too (16 MiB by default); lineLimitReader stops
	// first, at MaxMessageBytes, with an error that names the limit.
	return (&mcp.IOTransport{Reader: stdoutCloser{p, &lineLimitReader{r: outR, overflow: t.overflow}}, Writer: p, MaxLineLength: 2 * MaxMessageBytes}).Connect(ctx)
}

// stdioProcess is a running stdio server: writing goes to its stdin,
// closing stops it (stdin closed, then an interrupt, then a kill of the
// whole group, each after stopGrace).
type stdioProcess struct {
	cmd        *exec.Cmd
	stdin      *os.File
	stdout     *os.File
	exited     chan struct{}
	waitErr    error
	stderrDone chan struct{}
	once       sync.Once
}

func (p *stdioProcess) Write(b []byte) (int, error) { return p.stdin.Write(b) }

func (p *stdioProcess) Close() error {
	p.once.Do(func() {
		p.stdin.Close()
		timer := time.NewTimer(stopGrace)
		defer timer.Stop()
		select {
		case <-p.exited:
		case <-timer.C:
			_ = proc.InterruptGroup(p.cmd.Process)
			timer.Reset(stopGrace)
			select {
			case <-p.exited:
			case <-timer.C:
			}
		}
		// Also after a clean exit: anything the server left running in its
		// group goes with it.
		_ = proc.KillGroup(p.cmd.Process)
		<-p.exited
		p.stdout.Close()
		<-p.stderrDone
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

// logStderr logs each line a server writes on stderr, clipped.
func logStderr(r io.Reader, log *slog.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 2000 {
			line = line[:2000] + "…"
		}
		log.Debug("MCP server stderr", "line", line)
	}
	// A line longer than the buffer ends the scan; keep draining so the
	// server never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, r)
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
