package mcphost

import (
	"fmt"
	"io"
	"strings"
)

// ServerStatus is one server as `mcp list` and the mcp-servers resource
// show it.
type ServerStatus struct {
	Name        string       `json:"name"`
	Transport   string       `json:"transport"` // stdio, http or sse (the one in use)
	Target      string       `json:"target"`    // the URL, or the command line
	Description string       `json:"description,omitempty"`
	Trust       bool         `json:"trust"`
	State       State        `json:"state"` // disconnected, connecting, connected, failed or needs-sign-in
	Reason      string       `json:"reason,omitempty"`
	Tools       []ToolStatus `json:"tools"`
	Skipped     []Skipped    `json:"skipped,omitempty"`
}

// ToolStatus is a tool as declared to Gemini.
type ToolStatus struct {
	Name        string `json:"name"` // as declared to Gemini
	Tool        string `json:"tool"` // on its server
	Description string `json:"description,omitempty"`
}

// Status reports every configured server, in configuration order, with
// the secrets of its command line, URL and failure masked: it is shown to
// every client.
func (h *Host) Status() []ServerStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ServerStatus, 0, len(h.servers))
	for _, s := range h.servers {
		st := ServerStatus{
			Name:        s.cfg.Name,
			Transport:   s.transport,
			Target:      h.red.String(target(s.cfg)),
			Description: h.red.String(s.cfg.Description),
			Trust:       s.cfg.Trust,
			State:       s.state,
			Reason:      h.red.String(s.reason),
			Tools:       []ToolStatus{},
		}
		for _, t := range h.tools {
			if t.Server == s.cfg.Name {
				st.Tools = append(st.Tools, ToolStatus{Name: t.Name, Tool: t.Tool, Description: h.red.String(t.Description)})
			}
		}
		for _, sk := range h.skipped {
			if sk.Server == s.cfg.Name {
				sk.Reason = h.red.String(sk.Reason)
				st.Skipped = append(st.Skipped, sk)
			}
		}
		out = append(out, st)
	}
	return out
}

// target is what `gemini mcp list` prints after a server's name.
func target(c ServerConfig) string {
	if c.Endpoint() != "" {
		return c.Endpoint()
	}
	return strings.TrimSpace(c.Command + " " + strings.Join(c.Args, " "))
}

// WriteList prints servers as `gemini mcp list` does (one line each:
// mark, name, target, transport, state), with the failure reason and the
// declared tools under each.
func WriteList(w io.Writer, servers []ServerStatus) error {
	if len(servers) == 0 {
		_, err := fmt.Fprintln(w, "No MCP servers configured.")
		return err
	}
	var b strings.Builder
	b.WriteString("Configured MCP servers:\n\n")
	for _, s := range servers {
		mark, state := "✗", "Disconnected"
		switch s.State {
		case StateConnected:
			mark, state = "✓", "Connected"
		case StateConnecting:
			mark, state = "…", "Connecting"
		case StateFailed:
			mark, state = "✗", "Failed"
		case StateNeedsSignIn:
			mark, state = "⚠", "Needs sign-in"
		}
		fmt.Fprintf(&b, "%s %s: %s (%s) - %s\n", mark, s.Name, s.Target, s.Transport, state)
		if s.Reason != "" {
			fmt.Fprintf(&b, "    reason: %s\n", s.Reason)
		}
		for _, t := range s.Tools {
			fmt.Fprintf(&b, "    %s (%s)\n", t.Name, t.Tool)
		}
		for _, sk := range s.Skipped {
			fmt.Fprintf(&b, "    not offered: %s (%s)\n", sk.Tool, sk.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
