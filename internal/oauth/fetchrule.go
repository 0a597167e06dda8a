package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// MaxRedirects bounds the redirects one request to an issuer follows.
const MaxRedirects = 3

// fetchRule is where the documents of one issuer (its metadata, its JWKS)
// may be fetched from: the URLs its metadata names and every redirect
// hop obey it alike.
//
//   - https://, or http:// only on the issuer's own host when that host is
//     this machine (the rule of the issuer itself, for an authorization
//     server run on this machine): plain http never leaves that host,
//     to another loopback address or elsewhere;
//   - never an address written as link-local (cloud metadata such as
//     169.254.169.254), unspecified or multicast;
//   - loopback (an address, or localhost) only when the issuer is on
//     loopback itself: a remote authorization server cannot point the
//     server at this machine;
//   - no user information.
type fetchRule struct {
	host  string // the issuer's host name, lower case, without port
	local bool   // the issuer is on loopback
}

func newFetchRule(issuerID string) fetchRule {
	u, err := url.Parse(issuerID)
	if err != nil {
		return fetchRule{}
	}
	h := normalHost(u)
	return fetchRule{host: h, local: config.IsLoopbackHost(h)}
}

// normalHost is u's host name as compared: lower case, without brackets
// or a final dot.
func normalHost(u *url.URL) string {
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
}

// check applies the rule to u.
func (r fetchRule) check(u *url.URL) error {
	host := normalHost(u)
	where := u.Scheme + "://" + u.Host
	switch {
	case u.User != nil:
		return fmt.Errorf("%s is refused: a URL with user information", u.Scheme+"://…@"+u.Host)
	case u.Scheme == "https":
	case u.Scheme == "http" && r.local && host == r.host:
	case u.Scheme == "http":
		return fmt.Errorf("%s is refused: plain http only on the issuer's own host, when that is this machine", where)
	default:
		return fmt.Errorf("%s is refused: want https", where)
	}
	if host == "" {
		return fmt.Errorf("%s is refused: no host", where)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if ip.Zone() != "" || neverDialed(ip) {
			return fmt.Errorf("%s is refused: a link-local, unspecified or multicast address", where)
		}
		if ip.IsLoopback() && !r.local {
			return fmt.Errorf("%s is refused: a loopback address, for an issuer not on this machine", where)
		}
	} else if !r.local && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
		return fmt.Errorf("%s is refused: this machine, for an issuer not on it", where)
	}
	return nil
}

// neverDialed are the addresses no authorization server has: link-local
// (where cloud metadata services answer), unspecified, multicast.
func neverDialed(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified()
}

// ruleKey carries a request's fetchRule in its context.
type ruleKey struct{}

func withRule(ctx context.Context, r fetchRule) context.Context {
	return context.WithValue(ctx, ruleKey{}, r)
}

// checkRequest applies the rule in ctx to u; a request without one is
// refused.
func checkRequest(ctx context.Context, u *url.URL) error {
	r, ok := ctx.Value(ruleKey{}).(fetchRule)
	if !ok {
		return errors.New("no rule for this request")
	}
	return r.check(u)
}

// fetchClient is c following redirects only within the rule of the
// request's issuer and MaxRedirects.
func fetchClient(c *http.Client) *http.Client {
	out := *c
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects {
			return fmt.Errorf("more than %d redirects", MaxRedirects)
		}
		if err := checkRequest(req.Context(), req.URL); err != nil {
			return fmt.Errorf("redirect from %s: %w", via[len(via)-1].URL.Redacted(), err)
		}
		return nil
	}
	return &out
}

// defaultClient is the client of the requests to issuers when Options
// gives none: it dials no link-local, unspecified or multicast address,
// even one a name resolves to.
func defaultClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if ip, err := netip.ParseAddr(host); err == nil && neverDialed(ip) {
			return fmt.Errorf("address %s is refused: link-local, unspecified or multicast", ip)
		}
		return nil
	}}
	tr.DialContext = d.DialContext
	return &http.Client{Timeout: FetchTimeout, Transport: tr}
}
