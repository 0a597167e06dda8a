package interop

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/render"
)

// Protocol versions the tests expect a client to settle on.
const (
	versionModern = "2026-07-28" // served on stdio and stateless /mcp
	versionLegacy = "2025-11-25" // the newest one stateful /mcp and /sse serve
)

// needServer skips the test when TestMain built no server binary (no tool
// is configured), or fails it when the suite is required.
func needServer(t *testing.T) {
	t.Helper()
	if serverBin != "" {
		return
	}
	msg := "the server binary was not built: set " + EnvDir + " (see workshop/interop/README.md)"
	if required() {
		t.Fatalf("%s; required because CI or %s=1 is set", msg, fakeapi.EnvRequired)
	}
	t.Skip(msg)
}

// mcpgoMode is how an mcp-go client negotiates.
type mcpgoMode struct {
	name string
	// version is InitializeRequest's protocolVersion: "" is mcp-go's
	// default (it probes server/discover at 2026-07-28 first).
	version string
	opts    []mcpclient.ClientOption
}

var mcpgoModes = []mcpgoMode{
	{name: "default"},
	{name: "latest", version: mcpgo.LATEST_PROTOCOL_VERSION},
	{name: "legacy", opts: []mcpclient.ClientOption{mcpclient.WithProtocolVersion(versionLegacy)}},
}

// TestMCPGo drives the server with mcp-go's client (github.com/mark3labs/
// mcp-go, pinned in go.mod) in its default mode, which probes
// server/discover at 2026-07-28 before falling back to initialize, at the
// latest version named explicitly, and pinned to 2025-11-25: initialize,
// tools/list and a chat on the fake CLI, over stdio, Streamable HTTP (with
// and without sessions) and SSE. Each transport must settle on the newest
// version it serves.
func TestMCPGo(t *testing.T) {
	needServer(t)
	t.Parallel()
	stateful := newServer(t, serverOpts{http: true, tokens: []string{testToken}})
	stateless := newServer(t, serverOpts{http: true, stateless: true})
	stdio := newServer(t, serverOpts{})
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	for _, tc := range []struct {
		name   string
		s      *server
		want   string // the protocol version the client must settle on
		client func(t *testing.T, opts []mcpclient.ClientOption) *mcpclient.Client
	}{
		{"stdio", stdio, versionModern, func(t *testing.T, opts []mcpclient.ClientOption) *mcpclient.Client {
			tr := transport.NewStdioWithOptions(serverBin, append(os.Environ(), stdio.environ()...), stdio.args(),
				transport.WithCommandStderrWriter(&stderrSink{t: t}))
			return mcpclient.NewClient(tr, opts...)
		}},
		{"http", stateful, versionLegacy, func(t *testing.T, opts []mcpclient.ClientOption) *mcpclient.Client {
			tr, err := transport.NewStreamableHTTP(stateful.base+"/mcp", transport.WithHTTPHeaders(auth))
			if err != nil {
				t.Fatal(err)
			}
			return mcpclient.NewClient(tr, opts...)
		}},
		{"http_stateless", stateless, versionModern, func(t *testing.T, opts []mcpclient.ClientOption) *mcpclient.Client {
			tr, err := transport.NewStreamableHTTP(stateless.base + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			return mcpclient.NewClient(tr, opts...)
		}},
		{"sse", stateful, versionLegacy, func(t *testing.T, opts []mcpclient.ClientOption) *mcpclient.Client {
			tr, err := transport.NewSSE(stateful.base+"/sse", transport.WithHeaders(auth))
			if err != nil {
				t.Fatal(err)
			}
			return mcpclient.NewClient(tr, opts...)
		}},
	} {
		for _, mode := range mcpgoModes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				want := tc.want
				if mode.name == "legacy" {
					want = versionLegacy
				}
				c := tc.client(t, mode.opts)
				marker := "mcp-go " + tc.name + "/" + mode.name
				mcpgoSession(t, c, mode.version, want, marker)
			})
		}
	}
}

// mcpgoSession starts c, initializes it asking for version, checks that it
// settled on want, lists the tools and runs a chat whose prompt holds
// marker.
func mcpgoSession(t *testing.T, c *mcpclient.Client, version, want, marker string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	defer c.Close()
	init, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      mcpgo.Implementation{Name: "interop-mcp-go", Version: "1"},
	}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if c.ProtocolVersion() != want || init.ProtocolVersion != want {
		t.Errorf("settled on protocol %q (initialize result %q), want %q", c.ProtocolVersion(), init.ProtocolVersion, want)
	}
	if init.ServerInfo.Name != "gemini-mcp-server" {
		t.Errorf("serverInfo %+v", init.ServerInfo)
	}
	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"analyze", "chat", "chat-page", "chat-reply", "codereview", "debug", "image", "job", "precommit", "research", "sessions", "thinkdeep"}) {
		t.Errorf("tools %v", names)
	}
	prompt := "hello " + marker
	res, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": prompt}}})
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	var texts []string
	for _, content := range res.Content {
		if tc, ok := mcpgo.AsTextContent(content); ok {
			texts = append(texts, tc.Text)
		}
	}
	var id string
	if res.Meta != nil {
		id, _ = res.Meta.AdditionalFields["sessionId"].(string)
	}
	// The answer, then the note naming the session for models that see
	// only text (--session-id-in-text, on by default).
	if want := []string{wantAnswer(prompt), render.SessionNote(id)}; res.IsError || !slices.Equal(texts, want) {
		t.Errorf("chat: isError=%v %q, want %q", res.IsError, texts, want)
	}
	if !uuidRE.MatchString(id) {
		t.Errorf("chat: _meta %+v has no sessionId", res.Meta)
	}
}

// stderrSink keeps a stdio process's stderr and fails the test on a race
// report, a panic or a leaked exec.Cmd in it, as soon as one shows.
type stderrSink struct {
	t        *testing.T
	buf      geminitest.LockedBuffer
	mu       sync.Mutex
	reported map[string]bool
}

func (s *stderrSink) Write(p []byte) (int, error) {
	s.buf.Write(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	// The whole text, so that a marker split across writes is found too.
	for _, bad := range geminitest.Suspicious(s.buf.String()) {
		if !s.reported[bad] {
			if s.reported == nil {
				s.reported = map[string]bool{}
			}
			s.reported[bad] = true
			s.t.Errorf("stdio process stderr contains %q", bad)
		}
	}
	return len(p), nil
}

// TestMCPRemote drives the server's /mcp through mcp-remote (pinned in
// npm/package.json), the stdio-to-HTTP bridge desktop hosts use, with
// --protocol auto (it probes server/discover at 2026-07-28 and falls back
// to the client's initialize when the server says so) and in its default
// legacy mode. A stdio client (mcp-go, pinned to 2025-11-25 as such hosts
// are) lists the tools and runs a chat through it.
func TestMCPRemote(t *testing.T) {
	tl := tools(t)
	t.Parallel()
	bridge := tl.path("mcp-remote", "dist", "proxy.js")
	if _, err := os.Stat(bridge); err != nil {
		t.Fatalf("mcp-remote is not installed in %s (run npm ci with workshop/interop/npm again): %v", tl.dir, err)
	}
	for _, tc := range []struct {
		name      string
		stateless bool
		args      []string
	}{
		{name: "auto", args: []string{"--protocol", "auto"}},
		{name: "auto_stateless", stateless: true, args: []string{"--protocol", "auto"}},
		{name: "legacy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, serverOpts{http: true, tokens: []string{testToken}, stateless: tc.stateless})
			args := append([]string{bridge, s.base + "/mcp", "--header", "Authorization:Bearer " + testToken, "--transport", "http-only"}, tc.args...)
			stderr := &stderrSink{t: t}
			tr := transport.NewStdioWithOptions(tl.node, tl.env(t), args, transport.WithCommandStderrWriter(stderr))
			c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(versionLegacy))
			marker := "mcp-remote " + tc.name
			mcpgoSession(t, c, "", versionLegacy, marker)
			if t.Failed() {
				t.Logf("mcp-remote stderr:\n%s", clip(stderr.buf.String(), 8000))
			}
			found := false
			for _, inv := range s.invocations(t) {
				found = found || strings.Contains(inv.Prompt, marker)
			}
			if !found {
				t.Errorf("no CLI run for %q: the call did not reach this server", marker)
			}
		})
	}
}
