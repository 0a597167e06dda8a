// Package redact masks secrets in text that leaves the process: the log,
// `mcp list`, the mcp-servers resource, tool results and errors. A
// Redactor knows secrets by value (the API key, passwords and tokens of
// the configuration) and finds credentials in URLs by their place (the
// password of user:password@, the value of a key=, token= or secret=
// query parameter), whatever their value.
package redact

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "[redacted]"

// MinLen is the shortest value masked by value: shorter ones would mask
// ordinary words wherever they occur. Credentials in URLs are masked by
// their place whatever their length.
const MinLen = 6

// Redactor masks secrets. The zero value masks only credentials in URLs;
// Add teaches it values. It is safe for concurrent use.
type Redactor struct {
	mu     sync.RWMutex
	values []string
	repl   *strings.Replacer
}

// New returns a Redactor that knows values.
func New(values ...string) *Redactor {
	r := &Redactor{}
	r.Add(values...)
	return r
}

// Add teaches r more secret values (with their JSON- and URL-escaped
// forms); values shorter than MinLen are ignored.
func (r *Redactor) Add(values ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		for _, form := range forms(v) {
			if len(form) >= MinLen && !slices.Contains(r.values, form) {
				r.values = append(r.values, form)
			}
		}
	}
	// Longer values first, so that a secret holding another is masked
	// whole.
	slices.SortFunc(r.values, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(r.values))
	for _, v := range r.values {
		pairs = append(pairs, v, Mask)
	}
	r.repl = strings.NewReplacer(pairs...)
}

func forms(v string) []string {
	v = strings.TrimSpace(v)
	out := []string{v}
	if j, err := json.Marshal(v); err == nil {
		if s := string(j[1 : len(j)-1]); s != v {
			out = append(out, s)
		}
	}
	if q := url.QueryEscape(v); q != v {
		out = append(out, q)
	}
	return out
}

// String masks the secrets in s.
func (r *Redactor) String(s string) string {
	s = URLs(s)
	if r == nil {
		return s
	}
	r.mu.RLock()
	repl := r.repl
	r.mu.RUnlock()
	if repl == nil {
		return s
	}
	return repl.Replace(s)
}

// Contains reports whether s holds a secret r knows, or a credential in a
// URL.
func (r *Redactor) Contains(s string) bool { return r.String(s) != s }

var (
	// userinfoRE is scheme://user:password@ (the user may be empty, as in
	// redis://:password@host).
	userinfoRE = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/?#\s@]*:)([^@/?#\s]+)@`)
	// queryRE is a query parameter whose name says it holds a credential.
	queryRE = regexp.MustCompile(`(?i)([?&;](?:[a-z0-9_.-]*(?:key|token|secret|password|passwd|pwd|auth|signature|sig|credential)[a-z0-9_.-]*)=)([^&#\s"'<>]+)`)
)

// URLs masks the credentials of the URLs in s: the password of
// user:password@, and the values of query parameters named like key,
// token, secret, password, auth or signature.
func URLs(s string) string {
	if !strings.Contains(s, "://") && !strings.Contains(s, "=") {
		return s
	}
	s = userinfoRE.ReplaceAllString(s, "${1}"+Mask+"@")
	return queryRE.ReplaceAllString(s, "${1}"+Mask)
}

// URLSecrets returns the credentials of the URLs in s (the values URLs
// masks), for a Redactor to mask wherever else they appear.
func URLSecrets(s string) []string {
	var out []string
	for _, m := range userinfoRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[2])
		if u, err := url.PathUnescape(m[2]); err == nil && u != m[2] {
			out = append(out, u)
		}
	}
	for _, m := range queryRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[2])
		if u, err := url.QueryUnescape(m[2]); err == nil && u != m[2] {
			out = append(out, u)
		}
	}
	return out
}

// secretName is a variable, header or flag name that says it holds a
// secret: the Gemini CLI's rule for the environment it passes on.
var secretName = regexp.MustCompile(`(?i)TOKEN|SECRET|PASSWORD|PASSWD|KEY|AUTH|CREDENTIAL|CREDS|PRIVATE|CERT|COOKIE|DSN|DATABASE_URL|CONNECTION_STRING`)

// SecretName reports whether name (of a variable, header or flag) says it
// holds a secret.
func SecretName(name string) bool { return secretName.MatchString(name) }

// EnvSecrets returns the values of environ ("NAME=value" entries) that
// are secrets: those of variables named like one, and the credentials of
// URLs in any value.
func EnvSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			continue
		}
		if SecretName(k) && !strings.HasPrefix(strings.ToUpper(k), "GEMINI_CLI_") && !setting(v) {
			out = append(out, v)
		}
		out = append(out, URLSecrets(v)...)
	}
	return out
}

// setting reports whether v is a number, a duration or a yes/no: the
// value of a setting such as GEMINI_MCP_MAX_CONTEXT_TOKENS, not a secret.
func setting(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off":
		return true
	}
	return settingRE.MatchString(v)
}

var settingRE = regexp.MustCompile(`^[0-9][0-9_.,]*(ns|us|ms|s|m|h|[kKMG]i?B?)?$`)

// Handler wraps h so that every record's message and attributes are
// masked by r before h writes them.
func Handler(h slog.Handler, r *Redactor) slog.Handler {
	return &handler{next: h, r: r}
}

// Of returns the Redactor of a handler made by Handler, or nil.
func Of(h slog.Handler) *Redactor {
	if rh, ok := h.(*handler); ok {
		return rh.r
	}
	return nil
}

type handler struct {
	next slog.Handler
	r    *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(masked), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), r: h.r}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		masked := make([]any, len(group))
		for i, g := range group {
			masked[i] = h.attr(g)
		}
		return slog.Group(a.Key, masked...)
	case slog.KindAny:
		// Errors, stringers and values of any kind are logged as text:
		// mask that text.
		s := v.String()
		if m := h.r.String(s); m != s {
			return slog.String(a.Key, m)
		}
		return slog.Attr{Key: a.Key, Value: v}
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}
