package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/app"
)

// The tests of this file check that the secrets of the configuration (the
// MCP servers' URLs, headers, env and arguments, the store's URL, the API
// key) reach no client, no log, no downstream server and no other host.

// leaks returns the secrets found in text, each with where.
func leaks(where, text string, secrets ...string) []string {
	var out []string
	for _, s := range secrets {
		if strings.Contains(text, s) {
			out = append(out, fmt.Sprintf("%s holds %q", where, s))
		}
	}
	return out
}

// TestHostSecretsMasked: `mcp list`, the mcp-servers resource, the log
// and the results sent to Gemini mask the passwords of URLs in arguments,
// URL query keys, header tokens and env secrets; a stdio server inherits
// neither the store's URL with its password nor any GEMINI_MCP_ setting.
func TestHostSecretsMasked(t *testing.T) {
	t.Parallel()
	const (
		dbPW      = "DbPassw0rdMARK"
		urlKey    = "UrlKeyMARK42"
		headerTok = "HeaderTokMARK"
		envSecret = "EnvSecretMARK"
		storePW   = "RedisPwMARK"
	)
	secrets := []string{dbPW, urlKey, headerTok, envSecret, storePW}
	envFile := filepath.Join(t.TempDir(), "env")
	h := newHostEnv(t, map[string]any{
		"db": down(t, map[string]any{"trust": true, "env": map[string]string{"DB_PASSWORD": envSecret}},
			"-tool", "echo", "-echo-env", "DB_PASSWORD", "-env-file", envFile, "postgres://admin:"+dbPW+"@db.internal/app"),
		"api": map[string]any{"url": "http://127.0.0.1:1/mcp?key=" + urlKey, "headers": map[string]string{"Authorization": "Bearer " + headerTok}, "timeout": 2000},
	})

	out := h.mcpList(t, []string{"GEMINI_MCP_STORE=redis://:" + storePW + "@127.0.0.1:1/0"}, "--log-level", "debug")
	if !strings.Contains(out, "✓ db: ") || !strings.Contains(out, "postgres://admin:[redacted]@db.internal/app") || !strings.Contains(out, "✗ api: http://127.0.0.1:1/mcp?key=[redacted]") {
		t.Errorf("mcp list:\n%s", out)
	}
	found := leaks("mcp list", out, secrets...)
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	found = append(found, leaks("the stdio server's environment", string(env), storePW)...)
	if strings.HasPrefix(string(env), "GEMINI_MCP_") || strings.Contains(string(env), "\nGEMINI_MCP_") {
		t.Errorf("the stdio server inherited GEMINI_MCP_ settings:\n%s", env)
	}
	if !strings.Contains(string(env), app.NestedEnv+"=1\n") {
		t.Errorf("the stdio server lacks the nested mark:\n%s", env)
	}
	if !strings.Contains(string(env), "DB_PASSWORD="+envSecret) {
		t.Errorf("the stdio server lacks the env it was given:\n%s", env)
	}

	found = append(found, leaks("the log of mcp list", h.stderr.String(), secrets...)...)
	h.stderr = newLogWatch()
	cs := h.stdio(t, nil, "")
	h.connected(t, "db")
	res, err := cs.ReadResource(guardCtx(t), &mcp.ReadResourceParams{URI: "gemini-mcp://mcp-servers"})
	if err != nil {
		t.Fatal(err)
	}
	found = append(found, leaks("the mcp-servers resource", res.Contents[0].Text, secrets...)...)
	prompt := `[[call:mcp_db_env:{}]]`
	chat(t, cs, "chat", map[string]any{"prompt": prompt})
	fr := h.results(prompt)
	if len(fr) != 1 || !strings.Contains(string(fr[0].Response), "DB_PASSWORD=[redacted]") {
		t.Errorf("function responses %s", fmtResponses(fr))
	}
	for _, r := range h.api.Requests() {
		found = append(found, leaks("a request to the Gemini API", string(r.Body), secrets...)...)
	}
	found = append(found, leaks("the log", h.stderr.String(), secrets...)...)
	for _, f := range found {
		t.Error(f)
	}
}

// recordingServer records the Authorization headers of the requests it
// gets and answers 404.
type recordingServer struct {
	mu    sync.Mutex
	auths []string
	n     int
}

func (s *recordingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.n++
	s.auths = append(s.auths, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	s.mu.Unlock()
	http.NotFound(w, r)
}

// serve serves h on a new loopback port until the test ends.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestHostHeadersStayWithTheirServer: a downstream server that redirects
// (307) to another host does not get that host the configured
// Authorization and key headers.
func TestHostHeadersStayWithTheirServer(t *testing.T) {
	t.Parallel()
	const token = "RedirTokMARK"
	other := &recordingServer{}
	otherAddr := serve(t, other)
	_, port, _ := net.SplitHostPort(otherAddr)
	redirect := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+port+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	h := newHostEnv(t, map[string]any{"moved": map[string]any{"httpUrl": "http://" + redirect + "/mcp",
		"headers": map[string]string{"Authorization": "Bearer " + token, "X-Api-Key": token}, "timeout": 3000}})
	out := h.mcpList(t, nil)
	other.mu.Lock()
	defer other.mu.Unlock()
	if other.n == 0 {
		t.Fatalf("the redirect was not followed; mcp list:\n%s", out)
	}
	for _, a := range other.auths {
		if strings.Contains(a, token) {
			t.Errorf("the other host got the header %q", a)
		}
	}
}

// TestAPIErrorMasksKey: an endpoint that echoes the x-goog-api-key header
// in its error puts the key neither in the tool's result nor in the log.
func TestAPIErrorMasksKey(t *testing.T) {
	t.Parallel()
	const key = "ApiKeyMARK-0123456789"
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 400, "status": "INVALID_ARGUMENT",
			"message": "API key not valid: " + r.Header.Get("X-Goog-Api-Key")}})
	}))
	h := newHostEnv(t, map[string]any{})
	h.vars = append(h.vars, "GEMINI_API_KEY="+key, "GOOGLE_GEMINI_BASE_URL=http://"+addr)
	cs := h.stdio(t, nil, "")
	res, err := cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "API key not valid: [redacted]") {
		t.Errorf("result %q", text)
	}
	for _, f := range append(leaks("the result", text, key), leaks("the log", h.stderr.String(), key)...) {
		t.Error(f)
	}
}
