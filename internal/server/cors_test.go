package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestCORS: preflights of allowed origins (listed or loopback) are
// answered without a token; those of other origins, and their requests,
// are refused without CORS headers; the answers to allowed origins'
// requests, refusals included, are readable by their pages.
func TestCORS(t *testing.T) {
	t.Parallel()
	const app = "https://app.example.com"
	h := newHTTPHarness(t, HTTPOptions{Tokens: []string{testToken}, AllowedOrigins: []string{app + "/"}})
	do := func(method, path, origin string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, h.url+path, strings.NewReader(""))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,mcp-session-id",
		"Access-Control-Request-Private-Network": "true"}
	for _, path := range []string{PathMCP, PathSSE} {
		for _, origin := range []string{app, "http://localhost:5173"} {
			resp := do(http.MethodOptions, path, origin, preflight)
			hd := resp.Header
			if resp.StatusCode != http.StatusNoContent || hd.Get("Access-Control-Allow-Origin") != origin ||
				hd.Get("Access-Control-Allow-Methods") != corsAllowMethods || hd.Get("Access-Control-Allow-Headers") != corsAllowHeaders ||
				hd.Get("Access-Control-Max-Age") != "600" || hd.Get("Access-Control-Allow-Private-Network") != "true" ||
				!strings.Contains(strings.Join(hd.Values("Vary"), ","), "Origin") || hd.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatalf("%s preflight from %s: %s %v", path, origin, resp.Status, hd)
			}
			// The request itself, without a token: refused, readably.
			resp = do(http.MethodPost, path, origin, nil)
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
				!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
				t.Fatalf("%s POST from %s: %s %v", path, origin, resp.Status, resp.Header)
			}
		}
		for _, origin := range []string{"https://evil.example.com", "null"} {
			for _, method := range []string{http.MethodOptions, http.MethodPost} {
				resp := do(method, path, origin, preflight)
				if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
					t.Fatalf("%s %s from %s: %s %v", method, path, origin, resp.Status, resp.Header)
				}
			}
		}
	}
	// Without an Origin, nothing of CORS.
	if resp := do(http.MethodPost, PathMCP, "", nil); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("POST without Origin: %s %v", resp.Status, resp.Header)
	}
}
