package mcphost

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maskedError is an error whose text has its secrets masked and is cut
// to MaxResultChars; it still matches its cause with errors.Is.
type maskedError struct {
	text string
	err  error
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }

func (h *Host) maskError(err error) error {
	if err == nil {
		return nil
	}
	text := truncateOutput(h.red.String(err.Error()), MaxResultChars)
	if text == err.Error() {
		return err
	}
	return &maskedError{text, err}
}

// maskResult masks the secrets the redactor knows in a tool's result,
// which goes to Gemini: a server may echo its own credentials.
func (h *Host) maskResult(res *mcp.CallToolResult) {
	if res == nil {
		return
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			c.Text = h.red.String(c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				c.Resource.Text = h.red.String(c.Resource.Text)
			}
		case *mcp.ResourceLink:
			c.URI = h.red.String(c.URI)
		}
	}
	if res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			if m := h.red.String(string(data)); m != string(data) {
				var v any
				if json.Unmarshal([]byte(m), &v) == nil {
					res.StructuredContent = v
				} else {
					res.StructuredContent = nil
				}
			}
		}
	}
}
