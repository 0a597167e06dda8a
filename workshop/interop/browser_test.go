package interop

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"time"
)

// EnvBrowser, set to 1, makes the test binary a headless browser: run as
// $BROWSER by `gemini-mcp-server mcp auth`, it opens the authorization URL
// (its last argument) and follows the redirects with cookies, as a
// browser whose user has signed in and consents would, until the host's
// loopback callback answers.
const EnvBrowser = "GEMINI_MCP_TEST_BROWSER"

func browse(authURL string) int {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: time.Minute}
	res, err := c.Get(authURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	fmt.Fprintf(os.Stderr, "browser: %s %s: %s\n", res.Request.URL.Host+res.Request.URL.Path, res.Status, strings.TrimSpace(string(body)))
	if res.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}
