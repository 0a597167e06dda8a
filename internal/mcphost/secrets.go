package mcphost

import (
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
)

// Secrets returns the secret values of a configuration, after $VAR
// expansion, for a redact.Redactor: every header value (and the token
// after "Bearer " or "Basic "), the env values whose names say they hold
// a secret, the value after an argument such as --token or --api-key (or
// in --token=VALUE), and the credentials of every URL in the command, the
// arguments, the URLs, env and headers.
func Secrets(cfg *Config) []string {
	var out []string
	for _, s := range cfg.Servers {
		texts := append([]string{s.Command, s.URL, s.HTTPURL, s.Cwd}, s.Args...)
		for k, v := range s.Headers {
			texts = append(texts, v)
			out = append(out, v)
			if _, tok, ok := strings.Cut(v, " "); ok && (strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Proxy-Authorization")) {
				out = append(out, strings.TrimSpace(tok))
			}
		}
		for k, v := range s.Env {
			texts = append(texts, v)
			if redact.SecretName(k) {
				out = append(out, v)
			}
		}
		for i, a := range s.Args {
			name, val, hasVal := strings.Cut(a, "=")
			if !strings.HasPrefix(name, "-") || !redact.SecretName(name) {
				continue
			}
			if hasVal {
				out = append(out, val)
			} else if i+1 < len(s.Args) {
				out = append(out, s.Args[i+1])
			}
		}
		if s.OAuth != nil && s.OAuth.ClientSecret != "" {
			out = append(out, s.OAuth.ClientSecret)
		}
		for _, t := range texts {
			out = append(out, redact.URLSecrets(t)...)
		}
	}
	return out
}
