package validate

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// MaxURLBytes bounds one URL a call names.
const MaxURLBytes = 2048

// nonPublic are the IP ranges a URL given to Gemini may not name besides
// what netip's predicates cover (loopback, RFC 1918 and RFC 4193
// private, link-local, multicast, unspecified): shared address space
// (CGNAT), "this network", the IETF protocol assignments, the benchmarking,
// documentation and reserved ranges, and the IPv6 prefixes that embed an
// IPv4 address (NAT64, 6to4, Teredo), whose embedded address would
// escape the IPv4 rules.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("::/96"),
}

// localSuffixes are host name endings that name this machine or a
// private network rather than a public site.
var localSuffixes = []string{
	"localhost", "local", "internal", "localdomain", "lan", "home", "home.arpa", "intranet",
	"corp", "private", "test", "invalid", "example", "onion",
}

// PublicAddr says whether ip is an address on the public internet: not
// loopback, private, link-local, CGNAT, multicast, unspecified or
// reserved.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || ip == netip.IPv4Unspecified() {
		return false
	}
	if ip.Is4() && ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// PublicURL checks a URL that Gemini is to read itself (the Gemini API's
// URL context): an absolute http:// or https:// URL without user
// information, whose host is a public name or address. It refuses
// loopback, private (RFC 1918, RFC 4193), link-local, CGNAT and reserved
// addresses, numeric hosts in the shorthand forms some resolvers take
// (127.1, 2130706433, 0x7f.1), names of one label (intranet hosts), and
// names under localhost, .local, .internal and the like. It resolves no
// name and fetches nothing: the URL goes to Google, whose servers read
// it. The error names the URL, its user information masked.
func PublicURL(raw string) error {
	shown := msg.Clip(raw, 200)
	if len(raw) > MaxURLBytes {
		return fmt.Errorf("URL %q is %d bytes, over the limit of %d", shown, len(raw), MaxURLBytes)
	}
	if err := Text("URL", raw, MaxURLBytes); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("URL %q is not a URL: %v", shown, strings.TrimPrefix(err.Error(), "parse "+fmt.Sprintf("%q", raw)+": "))
	}
	if u.User != nil {
		u.User = url.User("…")
		return fmt.Errorf("URL %q is refused: it carries user information (a name or password before the host); give the public URL without it", msg.Clip(u.String(), 200))
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return fmt.Errorf("URL %q is refused: only http:// and https:// URLs can be read", shown)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" || u.Opaque != "" {
		return fmt.Errorf("URL %q is refused: it names no host", shown)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" || !PublicAddr(ip) {
			return fmt.Errorf("URL %q is refused: %s is a loopback, private, link-local or reserved address, not a public one", shown, host)
		}
		return nil
	}
	if strings.HasPrefix(host, "[") || strings.ContainsAny(host, "[]%") {
		return fmt.Errorf("URL %q is refused: its host is not a valid name or address", shown)
	}
	labels := strings.Split(host, ".")
	if last := labels[len(labels)-1]; numericLabel(last) {
		return fmt.Errorf("URL %q is refused: its host %s is a numeric address in a form that may name a private one; "+
			"write a public address in dotted form, or the site's name", shown, host)
	}
	if len(labels) < 2 {
		return fmt.Errorf("URL %q is refused: %s is a name of one label (an intranet or local host), not a public site", shown, host)
	}
	for _, s := range localSuffixes {
		if host == s || strings.HasSuffix(host, "."+s) {
			return fmt.Errorf("URL %q is refused: %s names this machine or a private network (.%s), not a public site", shown, host, s)
		}
	}
	return nil
}

// numericLabel says whether a host's last label is a number (decimal,
// octal or hex), as in the IPv4 shorthands resolvers accept.
func numericLabel(s string) bool {
	if s == "" {
		return false
	}
	if strings.HasPrefix(s, "0x") {
		return true
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
