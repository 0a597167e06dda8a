package conversation

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
)

// Call is what the pipeline needs of the MCP request that carries a
// turn: who sent it, where its progress goes and the HTTP request whose
// end ends it. Service.CallOf makes it from the request, in the tool's
// handler; nothing below the handler sees the request itself.
type Call struct {
	Who identity.Who
	// notify sends progress to the client, with token, when it asked for
	// progress (nil otherwise).
	notify func(context.Context, *mcp.ProgressNotificationParams) error
	token  any
	// partial hears the answer's text as it arrives (a background turn:
	// its job's output so far); nil otherwise.
	partial func(text string)
	// request is the context of the HTTP request carrying the call (nil
	// if none).
	request context.Context
	// start is when the call began, which its progress counts from, so
	// that the progress of its Gather and of its turn increase together.
	start time.Time
}

// CallOf resolves the call req makes under ctx.
func (s *Service) CallOf(ctx context.Context, req *mcp.CallToolRequest) Call {
	c := Call{Who: identity.Who{Caller: identity.Of(ctx)}, start: time.Now()}
	if s.o.Remote {
		c.Who.Token = identity.TokenOf(c.Who.Caller)
	}
	if req == nil {
		return c
	}
	// A stateless server makes up a session id per request (or takes the
	// client's word for it): it names no one.
	if s.o.Remote && req.Session != nil && !s.o.Stateless {
		c.Who.MCPSession = req.Session.ID()
	}
	if req.Params != nil && req.Session != nil {
		if token := req.Params.GetProgressToken(); token != nil {
			c.notify, c.token = req.Session.NotifyProgress, token
		}
	}
	if s.o.RequestContext != nil {
		c.request = s.o.RequestContext(req)
	}
	return c
}
