package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rpcAnswer is a JSON-RPC response as a client reads it.
type rpcAnswer struct {
	Result *struct {
		SupportedVersions []string `json:"supportedVersions"`
		Tools             []any    `json:"tools"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		} `json:"data"`
	} `json:"error"`
}

// modernRequest is a 2026-07-28 request: its version, identity and
// capabilities travel in _meta.
func modernRequest(id int, method string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"_meta":{%q:%q,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		id, method, mcp.MetaKeyProtocolVersion, ModernProtocolVersion)
}

// decodeAnswer reads a JSON-RPC response from a JSON or an SSE body.
func decodeAnswer(t *testing.T, body string) rpcAnswer {
	t.Helper()
	body = strings.TrimSpace(body)
	if !strings.HasPrefix(body, "{") {
		for line := range strings.Lines(body) {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				body = data
				break
			}
		}
	}
	var a rpcAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("not a JSON-RPC response: %v: %q", err, body)
	}
	return a
}

// postMCP sends one POST to /mcp and returns its status and body.
func postMCP(t *testing.T, url string, headers map[string]string, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+PathMCP, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// modernStreamable sends a 2026-07-28 request to /mcp as a 2026-07-28
// client does (headers and _meta).
func modernStreamable(t *testing.T, url string) func(id int, method string) (int, rpcAnswer) {
	return func(id int, method string) (int, rpcAnswer) {
		status, body, _ := postMCP(t, url, map[string]string{"MCP-Protocol-Version": ModernProtocolVersion, "Mcp-Method": method}, modernRequest(id, method))
		return status, decodeAnswer(t, body)
	}
}

// modernSSE opens an SSE stream and sends 2026-07-28 requests on it; the
// answers come back on the stream.
func modernSSE(t *testing.T, url string) func(id int, method string) (int, rpcAnswer) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url+PathSSE, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	events := bufio.NewReader(resp.Body)
	next := func() (event, data string) {
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("SSE stream: %v", err)
			}
			line = strings.TrimRight(line, "\r\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "" && data != "":
				return event, data
			}
		}
	}
	event, endpoint := next()
	if event != "endpoint" {
		t.Fatalf("first SSE event %q %q", event, endpoint)
	}
	return func(id int, method string) (int, rpcAnswer) {
		resp, err := http.Post(url+endpoint, "application/json", strings.NewReader(modernRequest(id, method)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return resp.StatusCode, rpcAnswer{}
		}
		_, data := next()
		return resp.StatusCode, decodeAnswer(t, data)
	}
}

// TestProtocol2026Consistent checks, on every HTTP transport, that a
// 2026-07-28 client's server/discover tells the truth: a successful probe
// lists 2026-07-28 and the transport then serves it; a transport that does
// not serve it answers the probe with -32022 (HTTP 400 on Streamable HTTP)
// listing the versions it serves, which is what makes mcp-go and
// mcp-remote --protocol auto fall back to initialize.
func TestProtocol2026Consistent(t *testing.T) {
	t.Parallel()
	legacy := slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= ModernProtocolVersion })
	for _, tc := range []struct {
		name      string
		stateless bool
		sse       bool
		serves    bool
	}{
		{name: "stateful /mcp"},
		{name: "stateless /mcp", stateless: true, serves: true},
		{name: "/sse", sse: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHTTPHarness(t, HTTPOptions{Stateless: tc.stateless})
			send := modernStreamable(t, h.url)
			if tc.sse {
				send = modernSSE(t, h.url)
			}
			status, probe := send(1, "server/discover")
			_, list := send(2, "tools/list")
			served := list.Result != nil && len(list.Result.Tools) > 0
			if served != tc.serves {
				t.Fatalf("2026-07-28 tools/list served=%v, want %v: %+v", served, tc.serves, list.Error)
			}
			if tc.serves {
				if probe.Result == nil || !slices.Contains(probe.Result.SupportedVersions, ModernProtocolVersion) {
					t.Fatalf("serves 2026-07-28 but the probe says otherwise: %d %+v %+v", status, probe.Result, probe.Error)
				}
				return
			}
			if probe.Result != nil {
				t.Fatalf("server/discover succeeded (supportedVersions %v) on a transport that refuses 2026-07-28", probe.Result.SupportedVersions)
			}
			if probe.Error == nil || probe.Error.Code != mcp.CodeUnsupportedProtocolVersion ||
				!slices.Equal(probe.Error.Data.Supported, legacy) || probe.Error.Data.Requested != ModernProtocolVersion {
				t.Fatalf("probe answer: %d %+v", status, probe.Error)
			}
			if !tc.sse && status != http.StatusBadRequest {
				t.Fatalf("probe status %d, want 400", status)
			}
			if !strings.Contains(probe.Error.Message, "--stateless") {
				t.Errorf("the error does not say where 2026-07-28 is served: %q", probe.Error.Message)
			}
			if list.Error == nil || list.Error.Code != mcp.CodeUnsupportedProtocolVersion {
				t.Fatalf("2026-07-28 tools/list: %+v", list.Error)
			}
			// The go-sdk client asking for 2026-07-28 falls back and works.
			transport := "streamable"
			if tc.sse {
				transport = "sse"
			}
			cs, err := h.connect(t, transport, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSessionVersionHeader checks that a session is held to the protocol
// version its initialize negotiated: a JSON-RPC batch under an older
// version's MCP-Protocol-Version header (or none) is refused with a clear
// 400, as is a 2026-07-28 header; a single request under another supported
// version's header is served at the negotiated version, as the official
// conformance suite expects.
func TestSessionVersionHeader(t *testing.T) {
	t.Parallel()
	h := newHTTPHarness(t, HTTPOptions{})
	open := func(version string) string {
		status, body, hdr := postMCP(t, h.url, nil,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, version))
		sid := hdr.Get("Mcp-Session-Id")
		if status != 200 || sid == "" {
			t.Fatalf("initialize: %d %s", status, body)
		}
		t.Cleanup(func() {
			req, _ := http.NewRequest("DELETE", h.url+PathMCP, nil)
			req.Header.Set("Mcp-Session-Id", sid)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
		postMCP(t, h.url, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": version}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return sid
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	batch := ` [{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`
	type step struct {
		header, body string
		status       int
		says         string
	}
	check := func(sid string, steps []step) {
		t.Helper()
		for _, tc := range steps {
			hdr := map[string]string{"Mcp-Session-Id": sid}
			if tc.header != "" {
				hdr["MCP-Protocol-Version"] = tc.header
			}
			status, body, _ := postMCP(t, h.url, hdr, tc.body)
			if status != tc.status || !strings.Contains(body, tc.says) {
				t.Errorf("header %q, body %.30s: %d %.200q; want %d and %q", tc.header, tc.body, status, body, tc.status, tc.says)
			}
		}
	}

	check(open("2025-11-25"), []step{
		{"2025-11-25", list, 200, `"tools"`},
		{"2025-03-26", batch, 400, `MCP-Protocol-Version "2025-03-26" is not the version this session negotiated (2025-11-25)`},
		{"", batch, 400, "batching is not supported"},
		{ModernProtocolVersion, list, 400, `MCP-Protocol-Version "2026-07-28" is not the version this session negotiated`},
		{"2025-03-26", list, 200, `"tools"`},
		{"", list, 200, `"tools"`},
	})
	// A 2025-03-26 client sends no header and may batch, but not under a
	// newer version's header.
	check(open("2025-03-26"), []step{
		{"", batch, 200, `"id":4`},
		{"2025-11-25", batch, 400, `is not the version this session negotiated (2025-03-26)`},
	})
	if n := len(h.invocations()); n != 0 {
		t.Fatalf("refused requests reached the CLI %d times", n)
	}
}

// TestVersionGateForgetsSessions checks that the negotiated-version table
// keeps only live sessions once it grows.
func TestVersionGateForgetsSessions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, options{noConnect: true})
	g := newVersionGate(h.newServer(), HTTPOptions{})
	for i := range 10 * minSweep {
		g.remember(fmt.Sprintf("gone-%d", i), "2025-11-25")
		if n := len(g.negotiated); n > minSweep {
			t.Fatalf("%d entries for no live session", n)
		}
	}
}
