package server

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stalledPost sends the headers of a POST to /mcp that announces a body of n
// bytes and never sends it, as a slow or hostile client does; it returns
// the connection.
func stalledPost(t *testing.T, url, token string, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	_, err = c.Write([]byte("POST " + PathMCP + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\n" + auth + "Content-Length: " + strconv.Itoa(n) + "\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readResponse reads the server's answer on c; the deadline is only a
// failure guard against a server that holds the request.
func readResponse(t *testing.T, c net.Conn) (*http.Response, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return http.ReadResponse(bufio.NewReader(c), nil)
}

// TestHTTPUnauthenticatedStalledBody: a request without a valid token is
// refused on its headers at once, even though its body never comes.
func TestHTTPUnauthenticatedStalledBody(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: []string{testToken}})
	for _, token := range []string{"", "wrong-token-0123456789"} {
		resp, err := readResponse(t, stalledPost(t, h.url, token, 1000))
		if err != nil {
			t.Fatalf("token %q: no answer while the body is missing: %v", token, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: %s, want 401", token, resp.Status)
		}
	}
}

// TestHTTPStalledBodyTimesOut: an authenticated request whose body stalls
// is answered 408 and its connection closed once BodyReadTimeout passes,
// and /healthz keeps answering while many such requests are open.
func TestHTTPStalledBodyTimesOut(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: []string{testToken}, BodyReadTimeout: 300 * time.Millisecond})
	var stalled []net.Conn
	for range 50 {
		stalled = append(stalled, stalledPost(t, h.url, testToken, 1000))
		stalledPost(t, h.url, "", 1000)
	}
	resp, err := http.Get(h.url + PathHealthz)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %s", resp.Status)
	}
	for i, c := range stalled {
		resp, err := readResponse(t, c)
		if err != nil {
			t.Fatalf("stalled request %d: not dropped: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
			t.Fatalf("stalled request %d: %s (close %v), want 408 and the connection closed", i, resp.Status, resp.Close)
		}
	}
	if n := len(h.invocations()); n != 0 {
		t.Fatalf("stalled requests reached the CLI %d times", n)
	}
}
