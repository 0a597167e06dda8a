package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
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
	t.Parallel()
	h := newHTTPHarness(t, HTTPOptions{Tokens: []string{testToken}})
	for _, token := range []string{"", "wrong-token-0123456789"} {
		c := stalledPost(t, h.url, token, 1000)
		c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a failure guard only
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("token %q: no answer while the body is missing: %v", token, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: %s, want 401", token, resp.Status)
		}
		// The server must not wait for the body of a refused request.
		if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("token %q: the refused connection is still open: %v", token, err)
		}
	}
}

// TestHTTPStalledBodyTimesOut: an authenticated request whose body stalls
// is answered 408 and its connection closed once BodyReadTimeout passes,
// and /healthz keeps answering while many such requests are open.
func TestHTTPStalledBodyTimesOut(t *testing.T) {
	t.Parallel()
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

// TestReadAll reads bodies of known and unknown length around the cap and
// the block size, and refuses truncated and oversized ones.
func TestReadAll(t *testing.T) {
	t.Parallel()
	const max = 3*bodyBlock + 10
	for _, n := range []int{0, 1, bodyBlock - 1, bodyBlock, bodyBlock + 1, 3 * bodyBlock, max} {
		want := strings.Repeat("x", n)
		for _, length := range []int64{int64(n), -1} {
			// One byte at a time, then in bursts, as a network delivers.
			for _, r := range []io.Reader{iotest.OneByteReader(strings.NewReader(want)), iotest.HalfReader(strings.NewReader(want)), strings.NewReader(want)} {
				got, err := readAll(capped(r, max), length, max)
				if err != nil || string(got) != want {
					t.Fatalf("%d bytes, length %d: %d bytes, %v", n, length, len(got), err)
				}
			}
		}
	}
	var tooBig *http.MaxBytesError
	if _, err := readAll(capped(strings.NewReader(strings.Repeat("x", max+1)), max), -1, max); !errors.As(err, &tooBig) {
		t.Fatalf("chunked over the cap: %v", err)
	}
	if _, err := readAll(strings.NewReader("never read"), max+1, max); !errors.As(err, &tooBig) {
		t.Fatalf("declared over the cap: %v", err)
	}
	if _, err := readAll(strings.NewReader("short"), 10, max); err == nil {
		t.Fatal("a body shorter than its length was accepted")
	}
	boom := errors.New("connection reset")
	if _, err := readAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), -1, max); !errors.Is(err, boom) {
		t.Fatalf("a failing body: %v", err)
	}
}

// capped stands for http.MaxBytesReader, which needs a ResponseWriter.
func capped(r io.Reader, n int64) io.Reader {
	return &cappedReader{r: io.LimitReader(r, n+1), n: n}
}

type cappedReader struct {
	r    io.Reader
	n    int64
	read int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	m, err := c.r.Read(p)
	c.read += int64(m)
	if c.read > c.n {
		return m - int(c.read-c.n), &http.MaxBytesError{Limit: c.n}
	}
	return m, err
}

// TestHTTPKeepAlive: a request whose body was read, or had all arrived,
// keeps its connection for the next one.
func TestHTTPKeepAlive(t *testing.T) {
	// Stateless: the initializations leave no session behind.
	h := newHTTPHarness(t, HTTPOptions{Stateless: true})
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a failure guard only
	br := bufio.NewReader(c)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	head := "POST " + PathMCP + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
	for i, req := range []string{
		head + "Content-Length: " + strconv.Itoa(len(init)) + "\r\n\r\n" + init,
		head + "Transfer-Encoding: chunked\r\n\r\n" + strconv.FormatInt(int64(len(init)), 16) + "\r\n" + init + "\r\n0\r\n\r\n",
		"POST " + PathHealthz + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello",
		"GET " + PathHealthz + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
	} {
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("request %d: %s, close %v", i, resp.Status, resp.Close)
		}
	}
}
