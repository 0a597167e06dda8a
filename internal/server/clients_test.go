package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

const otherToken = "other-token-0123456789abcdef"

// spoof sends a client id header of its own, as an attacker would: the
// header that carried the token's id to the tools before the request's
// context did (the server must ignore it).
type spoof struct {
	id string
	rt http.RoundTripper
}

func (s spoof) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Gemini-Mcp-Server-Client", s.id)
	return s.rt.RoundTrip(r)
}

func newClientsHarness(t *testing.T, o HTTPOptions, share bool) *httpHarness {
	return newHTTPHarness(t, o, options{remote: &o, shareSessions: share})
}

func (h *httpHarness) client(t *testing.T, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: h.url + PathMCP, HTTPClient: &http.Client{Transport: rt}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "clients-test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func withToken(token string) http.RoundTripper { return bearer{token, http.DefaultTransport} }

// callOn calls a tool on cs and returns the text, the sessionId and
// whether it failed.
func callOn(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	id, _ := res.Meta["sessionId"].(string)
	return res.Content[0].(*mcp.TextContent).Text, id, res.IsError
}

// TestHTTPSessionsBelongToTheirToken checks that over HTTP, a client holding
// one token never lands in a session started with another: not through
// chat-reply without sessionId, not by id, not through the CLI's "latest",
// and not by sending the header that names the token, stateful or not.
func TestHTTPSessionsBelongToTheirToken(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		name := "stateful"
		if stateless {
			name = "stateless"
		}
		t.Run(name, func(t *testing.T) {
			h := newClientsHarness(t, HTTPOptions{Tokens: []string{testToken, otherToken}, Stateless: stateless}, false)
			one := h.client(t, withToken(testToken))
			two := h.client(t, withToken(otherToken))

			_, id1, isErr := callOn(t, one, "chat", map[string]any{"prompt": "one's secret"})
			if isErr || id1 == "" {
				t.Fatal("chat of client one failed")
			}
			before := len(h.invocations())
			refused := []map[string]any{
				{"prompt": "no id"},
				{"prompt": "no id, in cwd", "cwd": h.home},
				{"prompt": "by id", "sessionId": id1},
				{"prompt": "by id and cwd", "sessionId": id1, "cwd": h.home},
				{"prompt": "latest", "sessionId": "latest"},
				{"prompt": "index", "sessionId": "1", "cwd": h.home},
			}
			for _, args := range refused {
				if text, _, isErr := callOn(t, two, "chat-reply", args); !isErr || !strings.HasPrefix(text, toolerr.ErrorPrefix) {
					t.Errorf("client two, %v: %q", args, text)
				}
			}
			if n := len(h.invocations()); n != before {
				t.Fatalf("%d of client two's calls reached client one's session", n-before)
			}

			_, id2, isErr := callOn(t, two, "chat", map[string]any{"prompt": "two's own"})
			if isErr || id2 == "" || id2 == id1 {
				t.Fatal("chat of client two failed")
			}
			// Each client's newest session is its own, whichever is newer
			// overall.
			if text, got, isErr := callOn(t, one, "chat-reply", map[string]any{"prompt": "more"}); isErr || got != id1 {
				t.Fatalf("client one continued %q, want %q: %s", got, id1, text)
			}
			if text, got, isErr := callOn(t, two, "chat-reply", map[string]any{"prompt": "more"}); isErr || got != id2 {
				t.Fatalf("client two continued %q, want %q: %s", got, id2, text)
			}
			if text, got, isErr := callOn(t, one, "chat-reply", map[string]any{"prompt": "by id", "sessionId": id1}); isErr || got != id1 {
				t.Fatalf("client one by id: %q %s", got, text)
			}
			// A client cannot claim another's identity with the header.
			req, _ := http.NewRequest("POST", h.url, nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			mallory := h.client(t, spoof{clientID(req), withToken(otherToken)})
			if text, got, isErr := callOn(t, mallory, "chat-reply", map[string]any{"prompt": "as one"}); isErr || got != id2 {
				t.Fatalf("a spoofed header reached %q (one's is %q): %s", got, id1, text)
			}
			if text, _, isErr := callOn(t, mallory, "chat-reply", map[string]any{"prompt": "as one", "sessionId": id1}); !isErr {
				t.Fatalf("a spoofed header continued one's session: %s", text)
			}
		})
	}
}

// TestHTTPSessionsWithoutTokens checks "this client's newest" when no
// tokens tell clients apart: per MCP session, and refused when there are
// no MCP sessions either.
func TestHTTPSessionsWithoutTokens(t *testing.T) {
	t.Parallel()
	h := newClientsHarness(t, HTTPOptions{}, false)
	one := h.client(t, http.DefaultTransport)
	two := h.client(t, http.DefaultTransport)
	_, id1, _ := callOn(t, one, "chat", map[string]any{"prompt": "one"})
	if text, _, isErr := callOn(t, two, "chat-reply", map[string]any{"prompt": "no id"}); !isErr || !strings.Contains(text, "no session") {
		t.Fatalf("MCP session two without sessions of its own: %q", text)
	}
	_, id2, _ := callOn(t, two, "chat", map[string]any{"prompt": "two"})
	if _, got, _ := callOn(t, one, "chat-reply", map[string]any{"prompt": "more"}); got != id1 {
		t.Fatalf("MCP session one continued %q, want %q", got, id1)
	}
	if _, got, _ := callOn(t, two, "chat-reply", map[string]any{"prompt": "more"}); got != id2 {
		t.Fatalf("MCP session two continued %q, want %q", got, id2)
	}
	// Without tokens, an id is enough: there is no one to keep out.
	if _, got, isErr := callOn(t, two, "chat-reply", map[string]any{"prompt": "by id", "sessionId": id1}); isErr || got != id1 {
		t.Fatalf("by id: %q", got)
	}

	sl := newClientsHarness(t, HTTPOptions{Stateless: true}, false)
	cs := sl.client(t, http.DefaultTransport)
	_, id, _ := callOn(t, cs, "chat", map[string]any{"prompt": "stateless"})
	if text, _, isErr := callOn(t, cs, "chat-reply", map[string]any{"prompt": "no id"}); !isErr || !strings.Contains(text, "pass the sessionId") {
		t.Fatalf("stateless without tokens guessed: %q", text)
	}
	if _, got, isErr := callOn(t, cs, "chat-reply", map[string]any{"prompt": "by id", "sessionId": id}); isErr || got != id {
		t.Fatalf("stateless by id: %q", got)
	}
}

// TestHTTPShareSessions checks the operator's switch: every token may then
// continue every session by id.
func TestHTTPShareSessions(t *testing.T) {
	t.Parallel()
	h := newClientsHarness(t, HTTPOptions{Tokens: []string{testToken, otherToken}}, true)
	one := h.client(t, withToken(testToken))
	two := h.client(t, withToken(otherToken))
	_, id1, _ := callOn(t, one, "chat", map[string]any{"prompt": "shared"})
	if text, got, isErr := callOn(t, two, "chat-reply", map[string]any{"prompt": "by id", "sessionId": id1}); isErr || got != id1 {
		t.Fatalf("shared session by id: %q %s", got, text)
	}
	// It is now client two's newest too.
	if text, got, isErr := callOn(t, two, "chat-reply", map[string]any{"prompt": "no id"}); isErr || got != id1 {
		t.Fatalf("shared session, no id: %q %s", got, text)
	}
}

// TestSSESessionsBelongToTheirCaller: with static tokens, and with OAuth
// access tokens (their subject is the caller, whichever of its tokens it
// presents), a session started over /sse belongs to its caller as one
// started over /mcp does: another caller, on either transport, neither
// lists it nor continues it, by id or as its newest; its own caller lists
// and continues it on both, with another of its tokens too.
func TestSSESessionsBelongToTheirCaller(t *testing.T) {
	t.Parallel()
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		subject := map[string]string{"jwt-alice": "alice", "jwt-alice-again": "alice", "jwt-bob": "bob"}[token]
		if subject == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "https://idp.example.com " + subject, Expiration: time.Now().Add(time.Hour), Scopes: []string{"gemini"}}, nil
	}
	oauth := &OAuthOptions{Verify: verify, Resource: "https://mcp.example.com/mcp", Issuers: []string{"https://idp.example.com"}, Scopes: []string{"gemini"}}
	for _, tc := range []struct {
		name                   string
		o                      HTTPOptions
		owner, again, stranger string
	}{
		{"tokens", HTTPOptions{Tokens: []string{testToken, otherToken}}, testToken, testToken, otherToken},
		{"oauth", HTTPOptions{OAuth: oauth}, "jwt-alice", "jwt-alice-again", "jwt-bob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newClientsHarness(t, tc.o, false)
			connect := func(transport, token string) *mcp.ClientSession {
				t.Helper()
				cs, err := h.connect(t, transport, token, nil)
				if err != nil {
					t.Fatalf("%s as %s: %v", transport, token, err)
				}
				return cs
			}
			listed := func(cs *mcp.ClientSession) string {
				t.Helper()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sessions", Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("sessions: %v %+v", err, res)
				}
				raw, _ := json.Marshal(res.StructuredContent)
				return string(raw)
			}
			owner := connect("sse", tc.owner)
			_, id, isErr := callOn(t, owner, "chat", map[string]any{"prompt": "the owner's secret"})
			if isErr || id == "" {
				t.Fatal("the owner's chat over /sse failed")
			}
			before := len(h.invocations())
			for _, transport := range []string{"streamable", "sse"} {
				stranger := connect(transport, tc.stranger)
				if l := listed(stranger); strings.Contains(l, id) {
					t.Errorf("another caller over %s lists the session: %s", transport, l)
				}
				for _, args := range []map[string]any{{"prompt": "by id", "sessionId": id}, {"prompt": "newest"}} {
					if text, _, isErr := callOn(t, stranger, "chat-reply", args); !isErr {
						t.Errorf("another caller over %s continued it with %v: %s", transport, args, text)
					}
				}
			}
			if n := len(h.invocations()); n != before {
				t.Fatalf("%d of another caller's calls ran", n-before)
			}
			for _, c := range []struct{ transport, token string }{{"sse", tc.owner}, {"streamable", tc.owner}, {"streamable", tc.again}, {"sse", tc.again}} {
				cs := connect(c.transport, c.token)
				if l := listed(cs); !strings.Contains(l, id) {
					t.Errorf("the owner over %s (%s) does not list its session: %s", c.transport, c.token, l)
				}
				if text, got, isErr := callOn(t, cs, "chat-reply", map[string]any{"prompt": "more", "sessionId": id}); isErr || got != id {
					t.Errorf("the owner over %s (%s) could not continue its session: %q %s", c.transport, c.token, got, text)
				}
			}
			if text, got, isErr := callOn(t, owner, "chat-reply", map[string]any{"prompt": "newest"}); isErr || got != id {
				t.Errorf("the owner's newest over /sse: %q %s", got, text)
			}
		})
	}
}
