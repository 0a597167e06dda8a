package mcphost

import (
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// MaxNameLength is the longest function name the host declares: the
// Gemini API allows 64 characters, and the CLI keeps one in reserve.
const MaxNameLength = 63

// ToolName is the name the Gemini CLI 0.61.0 declares a server's tool
// under (mcp-tool.ts generateValidName of server + "_" + tool):
//   - "mcp_" is put in front unless the joined name starts with it already
//     (so a server named "mcp_x" gives "mcp_x_tool", not "mcp_mcp_x_tool");
//   - every character outside [A-Za-z0-9_.:-] becomes "_" (one per UTF-16
//     unit, as JavaScript's replace counts them: a character outside the
//     Basic Multilingual Plane, such as an emoji, becomes "__");
//   - a name longer than 63 characters keeps its first 30 and last 30
//     characters with "..." between them (63 in all).
//
// The CLI also prefixes "_" to a name that starts with neither a letter
// nor "_"; with "mcp_" always in front that cannot happen.
func ToolName(server, tool string) string {
	name := server + "_" + tool
	if !strings.HasPrefix(name, "mcp_") {
		name = "mcp_" + name
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ':' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("__")
		default:
			b.WriteByte('_')
		}
	}
	name = b.String()
	if c := name[0]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		name = "_" + name
	}
	if len(name) > MaxNameLength {
		name = name[:30] + "..." + name[len(name)-30:]
	}
	return name
}

// Enabled reports whether a server's tool is offered, by the CLI's rule
// (mcp-client.ts isEnabled): a tool named in excludeTools never is; when
// includeTools is set, a tool is offered only if an entry equals its
// name or starts with its name followed by "(" (the "name(args)" form).
// Both lists hold the server's own tool names, not the declared ones.
func Enabled(s ServerConfig, tool string) bool {
	if tool == "" {
		return false
	}
	for _, ex := range s.ExcludeTools {
		if ex == tool {
			return false
		}
	}
	if s.IncludeTools == nil {
		return true
	}
	for _, in := range s.IncludeTools {
		if in == tool || strings.HasPrefix(in, tool+"(") {
			return true
		}
	}
	return false
}

// listing is one server's tools as it lists them.
type listing struct {
	cfg   ServerConfig
	tools []listedTool
}

// listedTool is a server's tool with what is declared of it to Gemini,
// prepared once when the tools are listed: its schema (nil, with the
// reason in refused, when it is not declared) and its description.
type listedTool struct {
	tool        *mcp.Tool
	schema      map[string]any
	description string
	refused     string
}

// prepareTools prepares a server's tools for declaring: schemas in the
// form Gemini takes, within MaxSchemaBytes, and descriptions cut to
// MaxDescriptionChars.
func prepareTools(tools []*mcp.Tool) []listedTool {
	out := make([]listedTool, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		lt := listedTool{tool: t, description: cutDescription(t.Description)}
		schema, err := GeminiSchema(t.InputSchema)
		if err != nil {
			lt.refused = err.Error()
		} else {
			lt.schema = schema
		}
		out = append(out, lt)
	}
	return out
}

// cutDescription cuts a description to MaxDescriptionChars characters.
func cutDescription(d string) string {
	if len(d) <= MaxDescriptionChars {
		return d
	}
	r := []rune(d)
	if len(r) <= MaxDescriptionChars {
		return d
	}
	return string(r[:MaxDescriptionChars]) + "…"
}

// Skipped is a server's tool that is not declared to Gemini, and why.
type Skipped struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// declare builds the tools declared to Gemini from the servers' listings,
// given in configuration order. Different servers' tools get different
// names as long as their server names differ after sanitizing ("a" with
// "b_c" and "a_b" with "c" both give mcp_a_b_c; so can two long names
// truncated alike). The CLI then keeps whichever registered last, which
// with parallel discovery depends on timing; here the first in
// configuration order (and in the server's list) keeps the name and the
// other is skipped, with the reason shown by `mcp list`.
func declare(servers []listing) ([]backend.HostTool, []Skipped) {
	var tools []backend.HostTool
	var skipped []Skipped
	owner := map[string]string{}
	for _, s := range servers {
		for _, lt := range s.tools {
			t := lt.tool
			if !Enabled(s.cfg, t.Name) {
				reason := "not in includeTools"
				if slices.Contains(s.cfg.ExcludeTools, t.Name) {
					reason = "in excludeTools"
				}
				if t.Name == "" {
					reason = "no name"
				}
				skipped = append(skipped, Skipped{s.cfg.Name, t.Name, reason})
				continue
			}
			if lt.refused != "" {
				skipped = append(skipped, Skipped{s.cfg.Name, t.Name, lt.refused})
				continue
			}
			name := ToolName(s.cfg.Name, t.Name)
			if prev, taken := owner[name]; taken {
				skipped = append(skipped, Skipped{s.cfg.Name, t.Name, fmt.Sprintf("its name %s is taken by %s", name, prev)})
				continue
			}
			owner[name] = fmt.Sprintf("tool %q of server %q", t.Name, s.cfg.Name)
			tools = append(tools, backend.HostTool{
				Name:        name,
				Server:      s.cfg.Name,
				Tool:        t.Name,
				Description: lt.description,
				Schema:      lt.schema,
				Trusted:     s.cfg.Trust,
			})
		}
	}
	return tools, skipped
}
