package tools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// Limits of the sessions tool's pages.
const (
	defaultSessionsLimit = 20
	maxSessionsLimit     = 100
)

// SessionsInput is the sessions tool's arguments; its tags are its input
// schema.
type SessionsInput struct {
	Limit  int    `json:"limit,omitempty" jsonschema:"Optional: how many sessions to list, 1 to 100 (default 20)."`
	Cursor string `json:"cursor,omitempty" jsonschema:"Optional: the nextCursor of the previous result, for the sessions after it. Omit it for the newest."`
	Cwd    string `json:"cwd,omitempty" jsonschema:"Optional: list only the sessions started in this working directory (absolute, or relative to the server's directory)."`
}

// SessionsOutput is the sessions tool's structured result.
type SessionsOutput struct {
	Sessions []SessionInfo `json:"sessions" jsonschema:"The sessions, the most recently used first."`
	// NextCursor is set when more sessions follow.
	NextCursor string `json:"nextCursor,omitempty" jsonschema:"Set when more sessions follow: pass it as cursor for the next page."`
}

// SessionInfo is one session as the sessions tool lists it.
type SessionInfo struct {
	ID       string `json:"id" jsonschema:"The sessionId: pass it to chat-reply to continue the conversation."`
	Backend  string `json:"backend" jsonschema:"cli (the Gemini CLI backends) or api (the Gemini API backend): a session continues only on its own."`
	Cwd      string `json:"cwd" jsonschema:"The working directory the session belongs to."`
	Model    string `json:"model,omitempty" jsonschema:"The model of its latest turn, when one was named."`
	Title    string `json:"title,omitempty" jsonschema:"The opening words of its first prompt."`
	Turns    int    `json:"turns" jsonschema:"How many turns it has had through this server."`
	LastUsed string `json:"lastUsed" jsonschema:"When its latest turn ended (RFC 3339)."`
	Host     string `json:"host,omitempty" jsonschema:"For the Gemini CLI backends: the host whose CLI keeps the session's files, the only one that can continue it."`
}

// AddSessions adds sessions to s.
func AddSessions(s *mcp.Server, d *Deps) { s.AddTool(sessionsTool(), handleOut(d.listSessions)) }

// extendSchema gives limit its range.
func (SessionsInput) extendSchema(s *jsonschema.Schema) {
	lim := s.Properties["limit"]
	lim.Minimum, lim.Maximum = ptr(1.0), ptr(float64(maxSessionsLimit))
}

func sessionsTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "sessions",
		Description: "List this client's Gemini conversations, the most recently used first: for each its sessionId, backend, working directory, model, " +
			"title (the opening words of its first prompt), turns and when it was last used. Use it to find a conversation again; " +
			"pass its sessionId to chat-reply to continue it.",
		InputSchema:  inputTypeOf[SessionsInput]().sc.CloneSchemas(),
		OutputSchema: outputSchema[SessionsOutput](),
		Annotations:  &mcp.ToolAnnotations{Title: "List Gemini chats", ReadOnlyHint: true},
	}
}

// listSessions lists the sessions the caller may continue (see
// conversation.Service.Sessions).
func (d *Deps) listSessions(ctx context.Context, req *mcp.CallToolRequest, in SessionsInput) (*mcp.CallToolResult, *SessionsOutput, error) {
	limit := in.Limit
	if limit == 0 {
		limit = defaultSessionsLimit
	}
	if limit < 1 || limit > maxSessionsLimit {
		return toolerr.Failure(fmt.Errorf("limit %d is out of range: pass 1 to %d, or omit it for %d", in.Limit, maxSessionsLimit, defaultSessionsLimit)), nil, nil
	}
	offset, err := parseCursor(in.Cursor)
	if err != nil {
		return toolerr.Failure(err), nil, nil
	}
	recs, more, err := d.Conv.Sessions(ctx, d.Conv.CallOf(ctx, req).Who, in.Cwd, offset, limit)
	if err != nil {
		return toolerr.Failure(err), nil, nil
	}
	out := &SessionsOutput{Sessions: make([]SessionInfo, 0, len(recs))}
	for _, r := range recs {
		out.Sessions = append(out.Sessions, SessionInfo{ID: r.ID, Backend: r.Family(), Cwd: r.Cwd, Model: r.Model, Title: r.Title,
			Turns: r.Turns, LastUsed: r.Updated.UTC().Format(time.RFC3339), Host: r.Host})
	}
	if more && len(recs) > 0 && offset <= math.MaxInt-len(recs) {
		// A page with nothing on it cannot lead anywhere: its cursor
		// would be its own, and a client would page forever.
		out.NextCursor = makeCursor(offset + len(recs))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: sessionsText(out, offset)}}}, out, nil
}

// sessionsText is the result for a reader (and for clients that show the
// model only text): one line per session, its title under it.
func sessionsText(out *SessionsOutput, offset int) string {
	if len(out.Sessions) == 0 {
		if offset > 0 {
			return "No more sessions."
		}
		return "No sessions yet: start one with chat."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Sessions %d to %d, the most recently used first (continue one with chat-reply and its sessionId):\n", offset+1, offset+len(out.Sessions))
	for _, s := range out.Sessions {
		fmt.Fprintf(&b, "\n%s  %s  %s", s.ID, s.Backend, s.Cwd)
		if s.Model != "" {
			fmt.Fprintf(&b, "  %s", s.Model)
		}
		fmt.Fprintf(&b, "  %d turns  last used %s", s.Turns, s.LastUsed)
		if s.Host != "" {
			fmt.Fprintf(&b, "  host %s", s.Host)
		}
		if s.Title != "" {
			fmt.Fprintf(&b, "\n  %q", s.Title)
		}
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "\n\nMore sessions follow: call sessions with cursor %q.", out.NextCursor)
	}
	return b.String()
}

// cursorPrefix marks the cursors this server makes. A cursor is opaque to
// clients; inside it is the offset of the next page in the newest-first
// list (a session used meanwhile moves to the front, so a page may repeat
// or skip one: the list is for finding a conversation, not an audit).
const cursorPrefix = "sessions:"

func makeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.Itoa(offset)))
}

var errCursor = errors.New("pass the nextCursor of the previous sessions result as it came, or no cursor for the newest sessions")

func parseCursor(c string) (int, error) {
	if c == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(raw), cursorPrefix) {
		return 0, fmt.Errorf("invalid cursor %q: %w", msg.Clip(c, 40), errCursor)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(string(raw), cursorPrefix))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid cursor %q: %w", msg.Clip(c, 40), errCursor)
	}
	return n, nil
}
