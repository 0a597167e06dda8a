package validate

import (
	"strings"
	"testing"
)

func TestPublicURL(t *testing.T) {
	ok := []string{
		"https://go.dev/doc/",
		"http://example.com:8080/a?b=c#d",
		"https://8.8.8.8/",
		"https://[2606:4700:4700::1111]/",
		"HTTPS://Go.Dev./x",
	}
	for _, u := range ok {
		if err := PublicURL(u); err != nil {
			t.Errorf("PublicURL(%q) = %v, want nil", u, err)
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
	}
	for u, want := range bad {
		err := PublicURL(u)
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
