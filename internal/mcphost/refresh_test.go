package mcphost

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// rotatingIssuer is an authorization server that rotates refresh tokens
// and, as oidc-provider and RFC 9700 §4.14.2 do, takes a spent refresh
// token presented again for a stolen one: it revokes the whole grant,
// the newest tokens too. Its access tokens live one second, less than
// the host's margin, so that every request refreshes.
type rotatingIssuer struct {
	srv       *httptest.Server
	mu        sync.Mutex
	n         int
	spent     map[string]bool // refresh tokens issued: true once used
	access    map[string]bool
	revoked   bool
	reused    int
	refreshes int
}

func newRotatingIssuer(t *testing.T) *rotatingIssuer {
	is := &rotatingIssuer{spent: map[string]bool{"refresh-0": false}, access: map[string]bool{"access-0": true}}
	is.srv = httptest.NewServer(http.HandlerFunc(is.token))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *rotatingIssuer) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	is.mu.Lock()
	defer is.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	rt := r.Form.Get("refresh_token")
	spent, known := is.spent[rt]
	switch {
	case r.Form.Get("grant_type") != "refresh_token" || !known || is.revoked:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant"}`)
		return
	case spent:
		is.reused++
		is.revoked = true
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant","error_description":"refresh token already used"}`)
		return
	}
	is.spent[rt] = true
	is.refreshes++
	is.n++
	next, access := fmt.Sprintf("refresh-%d", is.n), fmt.Sprintf("access-%d", is.n)
	is.spent[next], is.access[access] = false, true
	fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":1,"refresh_token":%q}`, access, next)
}

// valid reports an access token of the grant, while it is not revoked.
func (is *rotatingIssuer) valid(tok string) bool {
	is.mu.Lock()
	defer is.mu.Unlock()
	return !is.revoked && is.access[tok]
}

// protectedServer is an MCP server (Streamable HTTP or SSE) with an echo
// tool that answers 401 to a request without a valid access token.
func protectedServer(t *testing.T, transport string, is *rotatingIssuer) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("echo ", in["n"])}}}, nil, nil
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	if transport == TransportSSE {
		h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || !is.valid(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestConcurrentRefreshesSpendEachRefreshTokenOnce: the server's token
// lives one second, less than the host's margin, so every request
// refreshes it, and the authorization server revokes the grant when a
// refresh token is spent twice. Two configured servers of one URL in one
// host (one process), and a second host on another handle of the same
// token file (another process: a replica, `mcp auth` beside the running
// server), connect and call tools at once over each transport: every
// refresh token is spent once, no call fails and the grant stays.
func TestConcurrentRefreshesSpendEachRefreshTokenOnce(t *testing.T) {
	for _, transport := range []string{TransportHTTP, TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			is := newRotatingIssuer(t)
			u := protectedServer(t, transport, is)
			path := filepath.Join(t.TempDir(), "tokens.json")
			first := &TokenFile{Path: path}
			now := time.Now()
			if err := first.Save(context.Background(), &Token{Server: u, Issuer: is.srv.URL, ClientID: "cid", AuthMethod: "none", TokenURL: is.srv.URL + "/token",
				AccessToken: "access-0", RefreshToken: "refresh-0", Expiry: now.Add(time.Second), Updated: now}); err != nil {
				t.Fatal(err)
			}
			conf := func(name string) ServerConfig {
				if transport == TransportSSE {
					return ServerConfig{Name: name, URL: u, Type: TransportSSE}
				}
				return ServerConfig{Name: name, HTTPURL: u}
			}
			logs := &geminitest.LockedBuffer{}
			start := func(store TokenStore, servers ...ServerConfig) *Host {
				h := New(&Config{Servers: servers}, Options{
					Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
					Backoff: func(int) time.Duration { return time.Hour }, Tokens: store,
				})
				t.Cleanup(h.Close)
				return h
			}
			one := start(first, conf("a"), conf("b"))
			other := start(&TokenFile{Path: path}, conf("a"))
			ctx := geminitest.Context(t)
			var wg sync.WaitGroup
			errs := make(chan error, 100)
			for _, c := range []struct {
				h    *Host
				tool string
			}{{one, "mcp_a_echo"}, {one, "mcp_b_echo"}, {other, "mcp_a_echo"}} {
				for g := range 3 {
					wg.Go(func() {
						if err := c.h.WaitSettled(ctx); err != nil {
							errs <- err
							return
						}
						for i := range 3 {
							res, err := c.h.Call(ctx, c.tool, map[string]any{"n": g*10 + i})
							if err != nil {
								errs <- fmt.Errorf("%s: %w", c.tool, err)
								return
							}
							if got, want := text(t, res), fmt.Sprint("echo ", g*10+i); got != want {
								errs <- fmt.Errorf("%s answered %q, want %q", c.tool, got, want)
							}
						}
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			is.mu.Lock()
			defer is.mu.Unlock()
			if is.reused > 0 || is.revoked || is.refreshes == 0 {
				t.Errorf("%d refresh tokens spent twice (grant revoked: %v) in %d refreshes\n%s", is.reused, is.revoked, is.refreshes, logs)
			}
		})
	}
}
