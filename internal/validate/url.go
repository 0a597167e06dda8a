package validate

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/net/idna"

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

// hostProfile maps a host name as a URL parser does before it looks it
// up (the WHATWG URL standard's "domain to ASCII": UTS #46 processing,
// not transitional, without the STD3 rules): full-width letters, digits
// and dots, ideographic full stops and the like become their ASCII
// forms, upper case becomes lower, and other Unicode labels become
// punycode (xn--). A name is judged in this form, and passed on in it.
var hostProfile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false),
	idna.CheckHyphens(false), idna.CheckJoiners(true), idna.BidiRule(), idna.VerifyDNSLength(false))

// PublicURL checks a URL that Gemini is to read itself (the Gemini API's
// URL context): an absolute http:// or https:// URL without user
// information or white space, whose host is a public name or address. It
// refuses loopback, private (RFC 1918, RFC 4193), link-local, CGNAT and
// reserved addresses, numeric hosts in the shorthand forms some resolvers
// take (127.1, 2130706433, 0x7f.1), names of one label (intranet hosts),
// and names under localhost, .local, .internal and the like. The host is
// judged as a URL parser reads it: mapped first as browsers and fetchers
// map it (full-width digits and dots, U+3002 and other Unicode forms,
// see hostProfile), so that "１２７.０.０.１" is 127.0.0.1. It returns the
// URL to pass on: the same URL with its host in that ASCII form, so that
// what was judged is what is fetched. It resolves no name and fetches
// nothing: the URL goes to Google, whose servers read it. The error names
// the URL, its user information masked.
func PublicURL(raw string) (string, error) {
	shown := msg.Clip(raw, 200)
	if len(raw) > MaxURLBytes {
		return "", fmt.Errorf("URL %q is %d bytes, over the limit of %d", shown, len(raw), MaxURLBytes)
	}
	if err := Text("URL", raw, MaxURLBytes); err != nil {
		return "", err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("URL %q is not a URL: %v", shown, strings.TrimPrefix(err.Error(), "parse "+fmt.Sprintf("%q", raw)+": "))
	}
	if u.User != nil {
		u.User = url.User("…")
		return "", fmt.Errorf("URL %q is refused: it carries user information (a name or password before the host); give the public URL without it", msg.Clip(u.String(), 200))
	}
	if strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		// The URLs go to the model in the prompt's text, one a line: a
		// space would end one there and start another, unchecked.
		return "", fmt.Errorf("URL %q is refused: it contains white space or a control character; percent-encode it (a space is %%20)", shown)
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return "", fmt.Errorf("URL %q is refused: only http:// and https:// URLs can be read", shown)
	}
	host := u.Hostname()
	if host == "" || u.Opaque != "" {
		return "", fmt.Errorf("URL %q is refused: it names no host", shown)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" || !PublicAddr(ip) {
			return "", fmt.Errorf("URL %q is refused: %s is a loopback, private, link-local or reserved address, not a public one", shown, host)
		}
		return u.String(), nil
	}
	if strings.HasPrefix(host, "[") || strings.ContainsAny(host, "[]%") {
		return "", fmt.Errorf("URL %q is refused: its host is not a valid name or address", shown)
	}
	ascii, err := hostProfile.ToASCII(host)
	if err != nil || !hostChars(ascii) {
		return "", fmt.Errorf("URL %q is refused: its host is not a valid name or address", shown)
	}
	name := strings.TrimSuffix(ascii, ".")
	if ip, err := netip.ParseAddr(name); err == nil {
		if !PublicAddr(ip) {
			return "", fmt.Errorf("URL %q is refused: its host is %s, a loopback, private, link-local or reserved address, not a public one", shown, name)
		}
	} else {
		labels := strings.Split(name, ".")
		if slices.Contains(labels, "") {
			return "", fmt.Errorf("URL %q is refused: its host %s has an empty label", shown, name)
		}
		if last := labels[len(labels)-1]; numericLabel(last) {
			return "", fmt.Errorf("URL %q is refused: its host %s is a numeric address in a form that may name a private one; "+
				"write a public address in dotted form, or the site's name", shown, name)
		}
		if len(labels) < 2 {
			return "", fmt.Errorf("URL %q is refused: %s is a name of one label (an intranet or local host), not a public site", shown, name)
		}
		for _, s := range localSuffixes {
			if name == s || strings.HasSuffix(name, "."+s) {
				return "", fmt.Errorf("URL %q is refused: %s names this machine or a private network (.%s), not a public site", shown, name, s)
			}
		}
	}
	if p := u.Port(); p != "" {
		ascii = net.JoinHostPort(ascii, p)
	}
	u.Host = ascii
	return u.String(), nil
}

// hostChars says whether a host mapped to ASCII holds only what a name
// or an IPv4 address may: letters, digits, '-', '_' and dots. Another
// character there (a '/', ':' or '@' a full-width form maps to) would
// make the URL another one than the one judged.
func hostChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
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
