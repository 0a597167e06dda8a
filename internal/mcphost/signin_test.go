package mcphost

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// TestSignInCallbackListensOnLoopback: oauth.redirectUri's host is where
// the browser is sent, not where the callback listens: 0.0.0.0 (or any
// other host) still listens on loopback only.
func TestSignInCallbackListensOnLoopback(t *testing.T) {
	for _, redirect := range []string{"http://0.0.0.0/cb", "http://example.com/cb", "http://localhost/cb", "http://[::1]/cb"} {
		s, err := newSignIn(ServerConfig{Name: "down", HTTPURL: "http://127.0.0.1:1/mcp", OAuth: &OAuthConfig{RedirectURI: redirect}}, nil, "", nil)
		if err != nil {
			if strings.Contains(redirect, "::1") {
				t.Logf("%s: %v (no IPv6 loopback here)", redirect, err)
				continue
			}
			t.Fatal(err)
		}
		s.close()
		if ip := s.addr.(*net.TCPAddr).IP; !ip.IsLoopback() {
			t.Errorf("redirect %s: the callback listens on %s, not on loopback", redirect, s.addr)
		}
		if u, _ := url.Parse(s.redirect); u.Hostname() != strings.Trim(strings.TrimPrefix(strings.TrimSuffix(redirect, "/cb"), "http://"), "[]") {
			t.Errorf("redirect %s: the redirect sent is %s", redirect, s.redirect)
		}
	}
}

// signInServer is a downstream MCP server that answers 401 to requests
// without the access token "at-good", and the token endpoint of its
// authorization server, which gives that token for the code "good" and
// refuses every other code.
func signInServer(t *testing.T) (mcpURL, asURL string) {
	s := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer at-good" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("code") != "good" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant","error_description":"the code is not valid"}`)
			return
		}
		fmt.Fprint(w, `{"access_token":"at-good","token_type":"Bearer","expires_in":3600}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", srv.URL
}

// visit is the browser coming back to the callback: the page's status
// and text.
func visit(u string) (int, string) {
	res, err := http.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestSignInSaysHowItEnded: `mcp auth`'s callback. A redirect without the
// state of the authorization request (forged, or an older tab's) is
// refused on its page and in the log, and the sign-in goes on waiting for
// the real one; when the token exchange of the real one fails, its page
// and the host's error say so, and no other sign-in is started (the
// server's url would otherwise fall back to SSE and sign in anew). Only a
// code that gave a token says "Signed in".
func TestSignInSaysHowItEnded(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		ok         bool
	}{{"exchange refused", "bad", false}, {"signed in", "good", true}} {
		t.Run(tc.name, func(t *testing.T) {
			mcpURL, asURL := signInServer(t)
			var shown atomic.Int32
			pages := make(chan string, 8)
			browser := func(_ context.Context, authURL string) error {
				shown.Add(1)
				u, err := url.Parse(authURL)
				if err != nil {
					return err
				}
				cb, err := url.Parse(u.Query().Get("redirect_uri"))
				if err != nil {
					return err
				}
				cb.Host = "127.0.0.1:" + cb.Port()
				state := u.Query().Get("state")
				go func() {
					forged := *cb
					forged.RawQuery = url.Values{"code": {"good"}, "state": {"forged-" + state}}.Encode()
					status, page := visit(forged.String())
					pages <- fmt.Sprint(status, " ", page)
					real := *cb
					real.RawQuery = url.Values{"code": {tc.code}, "state": {state}}.Encode()
					status, page = visit(real.String())
					pages <- fmt.Sprint(status, " ", page)
				}()
				return nil
			}
			logs := &geminitest.LockedBuffer{}
			h := New(&Config{Servers: []ServerConfig{{Name: "down", URL: mcpURL, OAuth: &OAuthConfig{
				AuthorizationURL: asURL + "/authorize", TokenURL: asURL + "/token", ClientID: "cid", RedirectURI: "http://0.0.0.0/cb",
			}}}}, Options{
				Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				Backoff: func(int) time.Duration { return time.Hour }, Tokens: &MemoryTokens{}, Browser: browser,
			})
			defer h.Close()
			ctx := geminitest.Context(t)
			if err := h.WaitSettled(ctx); err != nil {
				t.Fatal(err)
			}
			st := h.Status()[0]
			page := func() string {
				select {
				case p := <-pages:
					return p
				case <-ctx.Done():
					t.Fatal("no page")
					return ""
				}
			}
			forged, real := page(), page()
			if !strings.HasPrefix(forged, "400 ") || !strings.Contains(forged, "Sign-in failed: this redirect does not belong to the sign-in in progress") {
				t.Errorf("the forged redirect's page: %s", forged)
			}
			if !strings.Contains(logs.String(), "a redirect to the sign-in's callback was refused") {
				t.Errorf("the forged redirect was not logged:\n%s", logs)
			}
			if tc.ok {
				if st.State != StateConnected || !strings.HasPrefix(real, "200 ") || !strings.Contains(real, "Signed in") {
					t.Errorf("state %s (%s); the page: %s", st.State, st.Reason, real)
				}
			} else {
				if st.State != StateFailed || !strings.Contains(st.Reason, "exchanging the code for a token") || !strings.Contains(st.Reason, "invalid_grant") {
					t.Errorf("state %s, reason %q; want the failed exchange", st.State, st.Reason)
				}
				if !strings.HasPrefix(real, "400 ") || !strings.Contains(real, "Sign-in failed: exchanging the code for a token") || strings.Contains(real, "Signed in") {
					t.Errorf("the page of the failed exchange: %s", real)
				}
			}
			if n := shown.Load(); n != 1 {
				t.Errorf("%d authorization URLs shown, want 1: the sign-in was started again\n%s", n, logs)
			}
		})
	}
}
