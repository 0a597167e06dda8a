package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromium finds Chromium to drive headless. Where GEMINI_MCP_BROWSER_
// REQUIRED=1 (scripts/test.sh, which installs Debian's chromium), its
// absence fails the test instead of skipping it.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err == nil {
		return path
	}
	if os.Getenv("GEMINI_MCP_BROWSER_REQUIRED") == "1" {
		t.Fatalf("GEMINI_MCP_BROWSER_REQUIRED=1 but %v (Debian: apt-get install chromium)", err)
	}
	t.Skipf("%v (set GEMINI_MCP_BROWSER_REQUIRED=1 to fail instead)", err)
	return ""
}

// browserPage is what a page reports of its calls to the server.
type browserPage struct {
	Status    int    `json:"status"`
	Session   string `json:"session"`
	Body      string `json:"body"`
	Tools     string `json:"tools"`
	Challenge string `json:"challenge"`
	Error     string `json:"error"`
}

// pageScript initializes an MCP session from the page with fetch(),
// lists the tools in it, sends one request without the token to read the
// 401's challenge, and posts what it saw to its own origin's /result.
const pageScript = `
const server = %q, token = %q;
const headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
  "Authorization": "Bearer " + token, "Mcp-Protocol-Version": "2025-06-18"};
async function rpc(body, extra) {
  return fetch(server, {method: "POST", headers: Object.assign({}, headers, extra || {}), body: JSON.stringify(body)});
}
(async () => {
  const out = {};
  try {
    const r = await rpc({jsonrpc: "2.0", id: 1, method: "initialize",
      params: {protocolVersion: "2025-06-18", capabilities: {}, clientInfo: {name: "browser", version: "1"}}});
    out.status = r.status;
    out.session = r.headers.get("Mcp-Session-Id") || "";
    out.body = await r.text();
    await rpc({jsonrpc: "2.0", method: "notifications/initialized"}, {"Mcp-Session-Id": out.session});
    const l = await rpc({jsonrpc: "2.0", id: 2, method: "tools/list"}, {"Mcp-Session-Id": out.session});
    out.tools = await l.text();
    const u = await fetch(server, {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"});
    out.challenge = u.headers.get("WWW-Authenticate") || "";
  } catch (e) {
    out.error = String(e);
  }
  await fetch("/result", {method: "POST", body: JSON.stringify(out)});
})();
`

// pageServer serves a page on a loopback port under a host name, which
// Chromium is told resolves to 127.0.0.1. Its origin is known before the
// browser starts, so that the server can list it.
type pageServer struct {
	origin  string
	results chan browserPage
	ln      net.Listener
}

func newPageServer(t *testing.T, host string) *pageServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pageServer{origin: fmt.Sprintf("http://%s:%d", host, ln.Addr().(*net.TCPAddr).Port), results: make(chan browserPage, 1), ln: ln}
	t.Cleanup(func() { ln.Close() })
	return p
}

// browse loads the page in headless Chromium and returns what it reports.
func (p *pageServer) browse(t *testing.T, browser, mcpURL, token string) browserPage {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>page</title><script>"+pageScript+"</script>", mcpURL, token)
	})
	mux.HandleFunc("POST /result", func(w http.ResponseWriter, r *http.Request) {
		var res browserPage
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := json.Unmarshal(body, &res); err != nil {
			res.Error = fmt.Sprintf("bad report %q: %v", body, err)
		}
		select {
		case p.results <- res:
		default:
		}
	})
	hs := &http.Server{Handler: mux}
	go hs.Serve(p.ln)
	defer hs.Close()

	host := strings.TrimPrefix(p.origin, "http://")
	host = host[:strings.LastIndex(host, ":")]
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--host-resolver-rules=MAP "+host+" 127.0.0.1", p.origin+"/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		// Chromium and its helpers share its process group.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // a failure guard only
	defer cancel()
	select {
	case res := <-p.results:
		return res
	case err := <-exited:
		t.Fatalf("chromium exited before the page reported: %v\n%s", err, stderr.String())
	case <-ctx.Done():
		t.Fatalf("the page reported nothing\nchromium: %s", stderr.String())
	}
	return browserPage{}
}

// TestHTTPBrowserPageOfAllowedOrigin loads, in a real headless Chromium, a
// page of an origin listed in --allowed-origins that calls the server,
// another origin, with fetch(): its preflights must be answered, its
// session opened, its Mcp-Session-Id readable. A page of an origin not
// listed must be refused.
func TestHTTPBrowserPageOfAllowedOrigin(t *testing.T) {
	browser := chromium(t)
	allowed := newPageServer(t, "app.test")
	other := newPageServer(t, "other.test")
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+connsToken)
	addr, _ := startHTTP(t, e, "--allowed-origins", allowed.origin)
	mcpURL := "http://" + addr + "/mcp"

	res := allowed.browse(t, browser, mcpURL, connsToken)
	if res.Error != "" || res.Status != http.StatusOK || res.Session == "" || !strings.Contains(res.Body, `"serverInfo"`) {
		t.Fatalf("a page of an allowed origin: %+v", res)
	}
	if !strings.Contains(res.Tools, `"chat-reply"`) {
		t.Fatalf("tools/list from the page: %q", res.Tools)
	}
	if !strings.Contains(res.Challenge, "Bearer") {
		t.Fatalf("the page could not read the 401's challenge: %+v", res)
	}

	res = other.browse(t, browser, mcpURL, connsToken)
	if res.Error == "" || res.Session != "" {
		t.Fatalf("a page of an origin not allowed reached the server: %+v", res)
	}

	// The preflight answers, as the browser saw them.
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, mcpURL, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,mcp-protocol-version,mcp-session-id")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight(allowed.origin)
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != allowed.origin ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Last-Event-ID") {
		t.Fatalf("preflight of an allowed origin: %s %v", resp.Status, resp.Header)
	}
	resp = preflight(other.origin)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight of an origin not allowed: %s %v", resp.Status, resp.Header)
	}
}
