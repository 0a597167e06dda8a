package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
)

const (
	// DefaultHealthURL is what `healthcheck` asks when neither --url nor
	// GEMINI_MCP_HTTP says otherwise: the /healthz of a server on port
	// 8080 (the container image's), from inside its host or container.
	DefaultHealthURL = "http://127.0.0.1:8080/healthz"
	// DefaultHealthTimeout bounds the whole check: connecting, the answer
	// and its body.
	DefaultHealthTimeout = 5 * time.Second
	// maxHealthBody caps what is read of the answer: /healthz answers a
	// small JSON object.
	maxHealthBody = 64 << 10
)

const healthcheckUsage = `Usage: gemini-mcp-server healthcheck [--url URL] [--timeout DURATION]

Asks a running HTTP server's /healthz and exits 0 when it answers 200 with
{"status":"ok"}, 1 when it does not (the reason on stderr), 2 on a usage
error. Made for container health checks: the image has no shell or curl.
Without --url it asks the server GEMINI_MCP_HTTP names (the address
the server in the same environment listens on; a wildcard host such as
0.0.0.0 is asked on 127.0.0.1), else ` + DefaultHealthURL + `.

Flags:
`

// Healthcheck is the healthcheck subcommand: args are its flags. It
// returns the exit code.
func Healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gemini-mcp-server healthcheck", flag.ContinueOnError)
	// Parse's own messages are replaced by the ones below.
	fs.SetOutput(io.Discard)
	rawURL := fs.String("url", "", "the server's /healthz `URL`, http or https (default: from GEMINI_MCP_HTTP, else "+DefaultHealthURL+")")
	timeout := fs.Duration("timeout", DefaultHealthTimeout, "limit of the whole check")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, healthcheckUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "gemini-mcp-server healthcheck: %v\nRun 'gemini-mcp-server healthcheck --help' for its flags.\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gemini-mcp-server healthcheck: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *rawURL == "" {
		def, err := healthURLFromAddr(getenv("GEMINI_MCP_HTTP"))
		if err != nil {
			fmt.Fprintf(stderr, "gemini-mcp-server healthcheck: %v; give --url\n", err)
			return 2
		}
		*rawURL = def
	}
	u, err := url.Parse(*rawURL)
	switch {
	case err != nil:
		// The parser's error quotes the URL, which may hold a password.
		fmt.Fprintln(stderr, "gemini-mcp-server healthcheck: --url is not a URL")
		return 2
	case u.User != nil:
		fmt.Fprintf(stderr, "gemini-mcp-server healthcheck: --url %s: a health check sends no credentials; leave out the user info\n", u.Redacted())
		return 2
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		fmt.Fprintf(stderr, "gemini-mcp-server healthcheck: --url %q is not an http or https URL with a host\n", *rawURL)
		return 2
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "gemini-mcp-server healthcheck: --timeout must be positive")
		return 2
	}
	if err := checkHealth(ctx, u.String(), *timeout); err != nil {
		fmt.Fprintf(stderr, "gemini-mcp-server healthcheck: %s: %v\n", u, err)
		return 1
	}
	fmt.Fprintf(stdout, "gemini-mcp-server healthcheck: %s ok\n", u)
	return 0
}

// healthURLFromAddr is the /healthz URL of a server listening on addr,
// the --http address; DefaultHealthURL when addr is "".
func healthURLFromAddr(addr string) (string, error) {
	if addr == "" {
		return DefaultHealthURL, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("GEMINI_MCP_HTTP=%q is not a host:port address", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("GEMINI_MCP_HTTP=%q names no fixed port", addr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		// A wildcard address listens on loopback too.
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + server.PathHealthz, nil
}

// checkHealth asks target once, within timeout, without proxies or
// redirects, and says why the answer is not a healthy server's.
func checkHealth(ctx context.Context, target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// No proxy (the zero Transport reads none from the environment).
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no answer within %v", timeout)
		}
		// The error names the URL, which the caller prints already.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no complete answer within %v", timeout)
		}
		return fmt.Errorf("reading the answer: %w", err)
	}
	if len(body) > maxHealthBody {
		return fmt.Errorf("the answer is longer than %d bytes: not this server's /healthz", maxHealthBody)
	}
	var h struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "ok" {
		return fmt.Errorf("the answer is not {\"status\":\"ok\"}: %.200q", body)
	}
	return nil
}
