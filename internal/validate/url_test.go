package validate

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPublicURL(t *testing.T) {
	// Each URL accepted, and the form passed on: its host as a URL
	// parser maps it.
	ok := map[string]string{
		"https://go.dev/doc/":                "https://go.dev/doc/",
		"http://example.com:8080/a?b=c#d":    "http://example.com:8080/a?b=c#d",
		"https://8.8.8.8/":                   "https://8.8.8.8/",
		"https://[2606:4700:4700::1111]/":    "https://[2606:4700:4700::1111]/",
		"HTTPS://Go.Dev./x":                  "https://go.dev./x",
		"https://bücher.de/straße?q=ä":       "https://xn--bcher-kva.de/stra%C3%9Fe?q=ä",
		"https://ｇｏ．ｄｅｖ/doc/":                "https://go.dev/doc/",
		"http://８.８.８.８:８０/":                 "", // a full-width port is no port
		"https://８.８.８.８/":                   "https://8.8.8.8/",
		"https://exa_mple.com/":              "https://exa_mple.com/",
		"https://例え.テスト.jp/":                 "https://xn--r8jz45g.xn--zckzah.jp/",
		"https://go.dev:443/a%20b/c%2Fd":     "https://go.dev:443/a%20b/c%2Fd",
		"https://xn--bcher-kva.de/":          "https://xn--bcher-kva.de/",
		"https://www.example.com/wiki/Ä?x#f": "https://www.example.com/wiki/%C3%84?x#f",
	}
	for u, want := range ok {
		got, err := PublicURL(u)
		if want == "" {
			if err == nil {
				t.Errorf("PublicURL(%q) = %q, want an error", u, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("PublicURL(%q) = %q, %v, want %q", u, got, err, want)
		}
	}
	bad := map[string]string{
		"ftp://example.com/x":                      "only http",
		"file:///etc/passwd":                       "only http",
		"https://user:s3cret@example.com/":         "user information",
		"/relative/path":                           "",
		"https://localhost/":                       "one label",
		"https://app.localhost/":                   "localhost",
		"http://127.0.0.1:8080/":                   "loopback",
		"http://[::1]/":                            "loopback",
		"http://10.1.2.3/":                         "private",
		"http://172.16.0.9/":                       "private",
		"http://192.168.1.1/":                      "private",
		"http://[fd00::1]/":                        "private",
		"http://169.254.169.254/latest/meta-data/": "link-local",
		"http://[fe80::1%25eth0]/":                 "refused",
		"http://100.64.1.1/":                       "reserved",
		"http://0.0.0.0/":                          "refused",
		"http://[::ffff:127.0.0.1]/":               "loopback",
		"http://[64:ff9b::a00:1]/":                 "reserved",
		"http://127.1/":                            "numeric",
		"http://2130706433/":                       "numeric",
		"http://0x7f.0.0.1/":                       "numeric",
		"http://printer/":                          "one label",
		"https://metadata.google.internal/":        ".internal",
		"https://nas.local/":                       ".local",
		"https://" + strings.Repeat("a", 3000):     "over the limit",
		"https://exa\x00mple.com/":                 "",
		// Hosts that a URL parser maps to the refused ones above.
		"http://１２７.０.０.１/":                         "127.0.0.1, a loopback",
		"http://１２７．０．０．１/":                         "127.0.0.1, a loopback",
		"http://127。0。0。1/":                         "127.0.0.1, a loopback",
		"http://127｡0｡0｡1/":                         "127.0.0.1, a loopback",
		"http://169.254.169.２５４/latest/meta-data/":  "169.254.169.254, a loopback, private, link-local",
		"http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1/": "127.0.0.1, a loopback",
		"http://１０.０.０.５/":                          "10.0.0.5",
		"https://ｍｅｔａｄａｔａ．ｇｏｏｇｌｅ．ｉｎｔｅｒｎａｌ/computeMetadata/": "metadata.google.internal names this machine",
		"https://metadata.google.ｉｎｔｅｒｎａｌ/":                 "metadata.google.internal names",
		"https://METADATA.GOOGLE.INTERNAL/":                 "metadata.google.internal names",
		"https://ＬＯＣＡＬＨＯＳＴ/":                                "one label",
		"https://app.ｌｏｃａｌｈｏｓｔ/":                            "app.localhost names",
		"http://１２７．１/":                                     "127.1 is a numeric address",
		"http://０ｘ７ｆ.1/":                                    "0x7f.1 is a numeric address",
		"http://２１３０７０６４３３/":                                "numeric",
		"http://127.0.0\u2488/":                             "not a valid name", // ⒈, "1." to some mappings
		"http://127.0.0.1／.example.com/":                    "not a valid name",
		"http://127.0.0.1：80.example.com/":                  "not a valid name",
		"http://evil.com＠127.0.0.1/":                        "not a valid name",
		"http://a\u200d.com/":                               "not a valid name", // a joiner out of context
		"http://xn--zz.com/":                                "not a valid name",
		"http://127.0.0.1../":                               "empty label",
		"http://a..b.com/":                                  "empty label",
		"https://example.com/ http://127.0.0.1/":            "white space",
		"https://example.com/?q=a\u3000http://127.0.0.1/":   "white space",
		"https://example.com/\u2028x":                       "white space",
	}
	for u, want := range bad {
		_, err := PublicURL(u)
		if err == nil {
			t.Errorf("PublicURL(%q) = nil, want an error", u)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("PublicURL(%q) = %q, want it to say %q", u, err, want)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("PublicURL's error shows the password: %q", err)
		}
	}
}

// FuzzPublicURL: whatever the string, PublicURL does not panic, and a URL
// it accepts comes back in a form that is a URL again, whose host is
// ASCII and, when an address, a public one, which PublicURL accepts as
// it is.
func FuzzPublicURL(f *testing.F) {
	for _, s := range []string{"https://go.dev/", "http://１２７.０.０.１/", "http://169.254.169.２５４/", "https://ｍｅｔａｄａｔａ．ｇｏｏｇｌｅ．ｉｎｔｅｒｎａｌ/",
		"https://bücher.de/", "http://127。0。0。1/", "http://[::1]/", "http://0x7f.1/", "https://a.b.c.d.e/x?y#z", "http://８.８.８.８/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		norm, err := PublicURL(s)
		if err != nil {
			return
		}
		u, err := url.Parse(norm)
		if err != nil {
			t.Fatalf("PublicURL(%q) = %q, not a URL: %v", s, norm, err)
		}
		host := strings.TrimSuffix(u.Hostname(), ".")
		for i := 0; i < len(host); i++ {
			if host[i] >= utf8.RuneSelf {
				t.Fatalf("PublicURL(%q) = %q, whose host is not ASCII", s, norm)
			}
		}
		if ip, err := netip.ParseAddr(host); err == nil && !PublicAddr(ip) {
			t.Fatalf("PublicURL(%q) = %q, of a non-public address", s, norm)
		}
		if strings.ContainsAny(norm, " \t\n\r") {
			t.Fatalf("PublicURL(%q) = %q, with white space", s, norm)
		}
		again, err := PublicURL(norm)
		if err != nil || again != norm {
			t.Fatalf("PublicURL(%q) = %q, but PublicURL(%q) = %q, %v", s, norm, norm, again, err)
		}
	})
}
