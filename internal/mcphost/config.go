// Package mcphost makes the server an MCP host for the API backend: it
// reads mcpServers in the Gemini CLI's own format, connects to every
// configured server, and offers their tools to Gemini under the names the
// Gemini CLI 0.61.0 gives them. The Gemini CLI backends do not use it: the
// CLI talks to its own mcpServers.
package mcphost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/clihome"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// DefaultTimeout is the Gemini CLI 0.61.0's MCP_DEFAULT_TIMEOUT_MSEC: how
// long a connection or a tool call may take when the server's timeout is
// unset.
const DefaultTimeout = 10 * time.Minute

// Transports, as ServerConfig.Transport names them (and as `gemini mcp
// list` prints them).
const (
	TransportStdio = "stdio"
	TransportSSE   = "sse"
	TransportHTTP  = "http"
)

// Config is the mcpServers of one configuration file, in the file's order.
type Config struct {
	Servers []ServerConfig
	// Warnings name settings the file has that this host does not use
	// (websockets, extensions): the server starts without them.
	Warnings []string
}

// ServerConfig is one entry of mcpServers, with $VAR references expanded.
type ServerConfig struct {
	Name string

	// Stdio.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string

	// Remote: URL with Type ("http", "sse" or "" for Streamable HTTP with
	// an SSE fallback), or HTTPURL (Streamable HTTP; wins over URL, as in
	// the CLI).
	URL     string
	HTTPURL string
	Type    string
	Headers map[string]string

	// Timeout bounds the connection and each tool call; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Trust lets the server's tools run without asking the user.
	Trust       bool
	Description string
	// IncludeTools, when not nil, lists the only tools offered (an entry
	// may be "name" or "name(…)"); ExcludeTools wins over it. Nil and
	// empty differ: an empty include list offers nothing, as in the CLI.
	IncludeTools []string
	ExcludeTools []string

	// Remote servers' authorization: AuthProvider is authProviderType
	// (AuthDynamicDiscovery when unset); OAuth is the oauth object, nil
	// when absent; the targets are service_account_impersonation's.
	AuthProvider         string
	OAuth                *OAuthConfig
	TargetAudience       string
	TargetServiceAccount string
}

// Transport is how the host reaches the server, chosen in the CLI's
// order: a URL before a command.
func (s ServerConfig) Transport() string {
	switch {
	case s.HTTPURL != "":
		return TransportHTTP
	case s.URL != "" && s.Type == TransportSSE:
		return TransportSSE
	case s.URL != "":
		return TransportHTTP
	default:
		return TransportStdio
	}
}

// Endpoint is the URL the host connects to, or "" for stdio.
func (s ServerConfig) Endpoint() string {
	if s.HTTPURL != "" {
		return s.HTTPURL
	}
	return s.URL
}

// SSEFallback reports whether a failed Streamable HTTP connection is
// retried over SSE: only for a url without a type, as in the CLI.
func (s ServerConfig) SSEFallback() bool {
	return s.HTTPURL == "" && s.URL != "" && s.Type == ""
}

// CallTimeout is Timeout, or DefaultTimeout when unset.
func (s ServerConfig) CallTimeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// LoadConfig reads path, which holds {"mcpServers": {...}} alone or a
// whole Gemini CLI settings.json (whose other keys are ignored).
func LoadConfig(path string, lookup func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("MCP server configuration: %w", err)
	}
	cfg, err := ParseConfig(data, lookup)
	if err != nil {
		return nil, fmt.Errorf("MCP server configuration %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses a configuration (see LoadConfig). lookup gives the
// environment for $VAR expansion (os.LookupEnv in the server).
func ParseConfig(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	// The Gemini CLI strips comments from settings.json before parsing it.
	data = clihome.StripComments(data)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	raw, ok := top["mcpServers"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, errors.New(`no "mcpServers" object: give {"mcpServers": {"name": {"command": ...}}} or a Gemini CLI settings.json that has one`)
	}
	names, values, err := orderedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("mcpServers: must be an object of servers by name (%w)", err)
	}
	cfg := &Config{}
	for i, name := range names {
		s, warns, err := parseServer(name, values[i], lookup)
		if err != nil {
			return nil, err
		}
		cfg.Servers = append(cfg.Servers, s)
		cfg.Warnings = append(cfg.Warnings, warns...)
	}
	return cfg, nil
}

// unusedKeys are MCPServerConfig settings of the CLI this host accepts and
// ignores, with what the user loses.
var unusedKeys = map[string]string{
	"tcp":       "websocket transport is not supported",
	"extension": "extension settings are ignored",
}

func parseServer(name string, raw json.RawMessage, lookup func(string) (string, bool)) (ServerConfig, []string, error) {
	s := ServerConfig{Name: name}
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("mcpServers.%s.%s: %s", name, key, fmt.Sprintf(format, args...))
	}
	if name == "" {
		return s, nil, errors.New(`mcpServers: a server name must not be empty`)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return s, nil, fmt.Errorf("mcpServers.%s: must be an object with command, url or httpUrl", name)
	}
	var warns []string
	str := func(key string, dst *string) error {
		v, ok := fields[key]
		if !ok {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return bad(key, "must be a string")
		}
		*dst = expand(*dst, lookup, true)
		return nil
	}
	strs := func(key string, dst *[]string) error {
		v, ok := fields[key]
		if !ok {
			return nil
		}
		var out []string
		if err := json.Unmarshal(v, &out); err != nil || (out == nil && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))) {
			return bad(key, "must be an array of strings")
		}
		if out == nil {
			return nil
		}
		for i := range out {
			out[i] = expand(out[i], lookup, true)
		}
		*dst = out
		return nil
	}
	// env and headers are expanded twice by the CLI: once with the whole
	// settings file (unknown variables stay as written), then again for
	// the process or request (unknown variables become empty).
	strMap := func(key string, dst *map[string]string) error {
		v, ok := fields[key]
		if !ok {
			return nil
		}
		var out map[string]string
		if err := json.Unmarshal(v, &out); err != nil {
			return bad(key, "must be an object of strings")
		}
		for k, val := range out {
			out[k] = expand(expand(val, lookup, true), lookup, false)
		}
		*dst = out
		return nil
	}
	for key := range fields {
		switch key {
		case "command", "args", "env", "cwd", "url", "httpUrl", "type", "headers",
			"timeout", "trust", "description", "includeTools", "excludeTools",
			"oauth", "authProviderType", "targetAudience", "targetServiceAccount":
		default:
			if why, ok := unusedKeys[key]; ok {
				warns = append(warns, fmt.Sprintf("mcpServers.%s.%s: ignored (%s)", name, key, why))
				continue
			}
			return s, nil, bad(key, "unknown setting; the known ones are command, args, env, cwd, url, httpUrl, type, headers, timeout, trust, description, includeTools, excludeTools, oauth, authProviderType, targetAudience, targetServiceAccount")
		}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"command", &s.Command}, {"cwd", &s.Cwd}, {"url", &s.URL}, {"httpUrl", &s.HTTPURL}, {"type", &s.Type}, {"description", &s.Description}} {
		if err := str(f.key, f.dst); err != nil {
			return s, nil, err
		}
	}
	for _, f := range []struct {
		key string
		dst *[]string
	}{{"args", &s.Args}, {"includeTools", &s.IncludeTools}, {"excludeTools", &s.ExcludeTools}} {
		if err := strs(f.key, f.dst); err != nil {
			return s, nil, err
		}
	}
	if err := strMap("env", &s.Env); err != nil {
		return s, nil, err
	}
	if err := strMap("headers", &s.Headers); err != nil {
		return s, nil, err
	}
	if v, ok := fields["trust"]; ok {
		if err := json.Unmarshal(v, &s.Trust); err != nil {
			return s, nil, bad("trust", "must be true or false")
		}
	}
	if v, ok := fields["timeout"]; ok {
		var ms float64
		if err := json.Unmarshal(v, &ms); err != nil || ms <= 0 || math.IsInf(ms, 0) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
			return s, nil, bad("timeout", "must be a positive number of milliseconds (for example 30000); leave it out for the default of %d", DefaultTimeout.Milliseconds())
		}
		s.Timeout = time.Duration(ms * float64(time.Millisecond))
	}
	switch s.Type {
	case "", TransportHTTP, TransportSSE:
	case TransportStdio:
		s.Type = ""
	default:
		return s, nil, bad("type", `must be "http" (Streamable HTTP), "sse" or "stdio", not %q`, s.Type)
	}
	for _, key := range []string{"httpUrl", "url"} {
		u := s.HTTPURL
		if key == "url" {
			u = s.URL
		}
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return s, nil, bad(key, "must be an http:// or https:// URL, not %q", u)
		}
	}
	if s.Command == "" && s.URL == "" && s.HTTPURL == "" {
		return s, nil, fmt.Errorf("mcpServers.%s: needs command (stdio), url (Streamable HTTP, or SSE with \"type\": \"sse\") or httpUrl", name)
	}
	if err := parseAuth(&s, fields, lookup, bad); err != nil {
		return s, nil, err
	}
	if s.HTTPURL != "" && s.URL != "" {
		warns = append(warns, fmt.Sprintf("mcpServers.%s: both httpUrl and url are set; httpUrl is used, as by the Gemini CLI", name))
	}
	return s, warns, nil
}

// orderedObject splits a JSON object into its keys and values in the
// file's order: the CLI discovers servers in that order, and `mcp list`
// prints them so.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("not an object")
	}
	var names []string
	var values []json.RawMessage
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if seen[name] {
			// JSON.parse keeps the last value of a repeated key.
			for i := range names {
				if names[i] == name {
					values[i] = v
				}
			}
			continue
		}
		seen[name] = true
		names = append(names, name)
		values = append(values, v)
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, nil, err
	}
	return names, values, nil
}

// expand replaces $VAR, ${VAR} and ${VAR:-default} as the Gemini CLI's
// settings loader does. A variable that is set (even to "") gives its
// value; an unset one gives its default, or else stays as written when
// keepUnknown, or becomes empty otherwise (as dotenv-expand does for env
// and headers).
func expand(s string, lookup func(string) (string, bool), keepUnknown bool) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		name, def, hasDef, n := "", "", false, 0
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i+2:], '}')
			if end <= 0 {
				b.WriteByte(s[i])
				i++
				continue
			}
			inner := s[i+2 : i+2+end]
			name = inner
			if j := strings.Index(inner, ":-"); j > 0 {
				name, def, hasDef = inner[:j], inner[j+2:], true
			}
			n = end + 3
		} else {
			j := i + 1
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte(s[i])
				i++
				continue
			}
			name, n = s[i+1:j], j-i
		}
		if v, ok := lookup(name); ok {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else if keepUnknown {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// RefuseSelf returns an error for a stdio server whose command is the
// executable self (compared as files, after symbolic links): registered
// in its own configuration, this server would start itself again with
// the same configuration, without end.
func RefuseSelf(cfg *Config, self string) error {
	me, err := os.Stat(self)
	if err != nil {
		return nil
	}
	for _, s := range cfg.Servers {
		if s.Transport() != TransportStdio || s.Command == "" {
			continue
		}
		path := s.Command
		if strings.ContainsRune(path, '/') || strings.ContainsRune(path, os.PathSeparator) {
			if !filepath.IsAbs(path) && s.Cwd != "" {
				path = filepath.Join(s.Cwd, path)
			}
		} else if p, err := proc.LookPath(path); err == nil {
			path = p
		} else {
			continue
		}
		if fi, err := os.Stat(path); err == nil && os.SameFile(fi, me) {
			return fmt.Errorf("mcpServers.%s.command: %s is this gemini-mcp-server itself: as a server of its own MCP host it would start itself again, without end; remove it from the configuration", s.Name, s.Command)
		}
	}
	return nil
}
