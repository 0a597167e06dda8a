// Package server builds the MCP server: its identity, its instructions and
// its tools, which its registry (registry.go) lists.
package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the server's name in the MCP handshake.
const Name = "gemini-mcp-server"

// instructions are the server's instructions to its clients' models,
// naming the tools f serves; the expert tools are named from the registry.
func instructions(f Families) string {
	var said []string
	switch {
	case f.serves("chat"):
		said = append(said, "Call chat to start a conversation (a second opinion, a review, research, a long-context question) "+
			"and chat-reply with the returned sessionId to continue it")
	case f.serves("chat-reply"):
		said = append(said, "Call chat-reply with a sessionId to continue a conversation")
	}
	if f.serves("sessions") {
		said = append(said, "sessions lists your earlier conversations")
	}
	if f.serves("image") {
		said = append(said, "image makes or edits pictures with Gemini's image models (Gemini API backend)")
	}
	if f.serves("research") {
		said = append(said, "research runs Gemini's Deep Research agent as a background job for a cited report (Gemini API backend)")
	}
	var experts []string
	for _, name := range RPCErrorTools() {
		if f.serves(name) {
			experts = append(experts, name)
		}
	}
	text := "Gives you Google Gemini, through the Gemini CLI or the Gemini API. "
	if len(said) > 0 {
		text += strings.Join(said, "; ") + ". "
	}
	switch len(experts) {
	case 0:
	case 1:
		text += experts[0] + " brings project files (the files argument) to Gemini for one kind of help; "
	default:
		text += andList(experts) + " bring project files (the files argument) to Gemini for one kind of help each; "
	}
	if len(experts) > 0 {
		text += "any tool continues a thread given its continuation_id. "
	}
	text += "A call takes seconds to minutes"
	if f.serves("job") {
		text += ": with background: true it answers at once with a jobId, and job returns its progress and result"
	}
	return text + "."
}

// New returns the MCP server with the tools f serves of the families it
// provides registered, each as the registry (Tools) lists it.
func New(version string, f Families, log *slog.Logger) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "Gemini (via the Gemini CLI)", Version: version},
		&mcp.ServerOptions{Instructions: instructions(f), Logger: log})
	if f.Chat != nil && f.Chat.Conv != nil {
		s.AddReceivingMiddleware(prepareOnConnect(f.Chat.Conv.Prepare))
	}
	register(s, f)
	s.AddReceivingMiddleware(refuseOversized(f))
	return s
}

// prepareOnConnect calls prepare once the server has answered a client's
// tools/list: a client that is to chat lists the tools first, right after
// its handshake, and the backend getting ready now (the warm backend starts
// a process) overlaps the client's own start-up. A health check (`gemini
// mcp list` connects and pings; others only connect) lists no tools, and
// so starts nothing. prepare returns at once, and does nothing once the
// backend is ready.
func prepareOnConnect(prepare func()) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err == nil && method == "tools/list" {
				prepare()
			}
			return res, err
		}
	}
}

// clientID names the holder of a bearer token in logs and session records
// without revealing the token: the first 64 bits of a hash of it, under a
// prefix of its own so that it matches no other use of the token's hash.
// r's token has been checked already.
func clientID(r *http.Request) string {
	_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	sum := sha256.Sum256([]byte("gemini-mcp-server client id\x00" + strings.TrimSpace(token)))
	return hex.EncodeToString(sum[:8])
}
