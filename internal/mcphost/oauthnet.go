package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/capio"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// Limits of the host's OAuth requests (metadata, registration, tokens),
// whose answers come from servers the MCP server names.
const (
	oauthRequestTimeout = 30 * time.Second
	maxOAuthBodyBytes   = 1 << 20
	maxOAuthRedirects   = 3
)

// errOAuthTooLarge ends a read past maxOAuthBodyBytes.
var errOAuthTooLarge = fmt.Errorf("an OAuth answer over %d bytes", maxOAuthBodyBytes)

// oauthClient is the HTTP client of one MCP server's OAuth requests. The
// MCP server chooses where they go (its metadata names the authorization
// server), so, as the Gemini CLI does, a remote server may not send them
// to this machine or its network: http:// and loopback addresses only
// when the MCP server itself is on loopback, and never a private,
// link-local (cloud metadata) or unspecified address given as such. The
// rule is checked on the address dialed too, so that a name resolving to
// loopback or a link-local address is refused as well. Every answer is
// capped in size and time.
type oauthClient struct {
	local bool // the MCP server is on loopback

	mu     sync.Mutex
	issuer string // the last authorization server metadata's issuer
}

func newOAuthClient(serverURL string) *oauthClient {
	u, err := url.Parse(serverURL)
	return &oauthClient{local: err == nil && config.IsLoopbackHost(u.Hostname())}
}

// HTTP returns the client.
func (c *oauthClient) HTTP() *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: c.control}
	base := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: oauthRequestTimeout,
		MaxIdleConns:          4,
		IdleConnTimeout:       30 * time.Second,
	}
	return &http.Client{
		Timeout:   oauthRequestTimeout,
		Transport: &oauthTransport{c: c, base: base},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxOAuthRedirects {
				return fmt.Errorf("more than %d redirects", maxOAuthRedirects)
			}
			return c.checkURL(req.URL)
		},
	}
}

// Issuer is the issuer of the last authorization server metadata read.
func (c *oauthClient) Issuer() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.issuer
}

// checkURL applies the rule to a URL before it is requested.
func (c *oauthClient) checkURL(u *url.URL) error {
	host := u.Hostname()
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && c.local && config.IsLoopbackHost(host):
	default:
		return fmt.Errorf("OAuth endpoint %s://%s is refused: OAuth endpoints must be https:// (http:// only on this machine, for an MCP server on this machine)", u.Scheme, u.Host)
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil && !c.local && blockedAddr(ip, true) {
		return fmt.Errorf("OAuth endpoint %s is refused: a private, loopback or reserved address, for a remote MCP server", u.Host)
	}
	return nil
}

// control checks the address about to be dialed.
func (c *oauthClient) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if !c.local && blockedAddr(ip, false) {
		return fmt.Errorf("OAuth endpoint address %s is refused: loopback, link-local or unspecified, for a remote MCP server", ip)
	}
	return nil
}

// blockedAddr reports an address a remote MCP server's OAuth requests may
// not reach: loopback, link-local, unspecified or multicast; and, when
// literal (written in the URL), private ones too. A name that resolves
// to a private address is allowed: identity providers inside a company
// network are.
func blockedAddr(ip netip.Addr, literal bool) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() ||
		(literal && ip.IsPrivate())
}

type oauthTransport struct {
	c    *oauthClient
	base http.RoundTripper
}

func (t *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.c.checkURL(req.URL); err != nil {
		return nil, err
	}
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	res.Body = capio.NewReadCloser(res.Body, maxOAuthBodyBytes, func() error { return errOAuthTooLarge })
	p := req.URL.Path
	if res.StatusCode == http.StatusOK && (strings.Contains(p, "/.well-known/oauth-authorization-server") || strings.Contains(p, "/.well-known/openid-configuration")) {
		// Read the metadata here to learn the issuer the token will be
		// kept under; the SDK reads the same bytes after.
		data, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		var meta struct {
			Issuer string `json:"issuer"`
		}
		if json.Unmarshal(data, &meta) == nil && meta.Issuer != "" {
			t.c.mu.Lock()
			t.c.issuer = meta.Issuer
			t.c.mu.Unlock()
		}
		res.Body = io.NopCloser(bytes.NewReader(data))
	}
	return res, nil
}

// postForm posts form to u with the client and decodes a JSON answer into
// dst; an OAuth error answer becomes an *oauthError.
func postForm(ctx context.Context, c *http.Client, u string, form url.Values, basicUser, basicPass string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basicUser != "" {
		req.SetBasicAuth(url.QueryEscape(basicUser), url.QueryEscape(basicPass))
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		oe := &oauthError{Status: res.StatusCode}
		json.Unmarshal(data, oe)
		return oe
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return fmt.Errorf("the token endpoint's answer is not JSON: %w", err)
	}
	return nil
}

// oauthError is an OAuth error answer (RFC 6749 §5.2). Its description
// comes from the server: it is cut short when shown.
type oauthError struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (e *oauthError) Error() string {
	s := fmt.Sprintf("the token endpoint answered %d", e.Status)
	if e.Code != "" {
		s += " " + shorten(e.Code, 64)
	}
	if e.Description != "" {
		s += ": " + shorten(e.Description, 200)
	}
	return s
}

// grantRevoked reports an answer that means the grant is gone: only a new
// sign-in helps.
func grantRevoked(err error) bool {
	var oe *oauthError
	if !errors.As(err, &oe) {
		return false
	}
	switch oe.Code {
	case "invalid_grant", "invalid_client", "unauthorized_client":
		return true
	}
	return oe.Status == http.StatusUnauthorized
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
