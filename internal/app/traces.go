package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/trace"
)

// traceFlushGrace bounds the export of the spans still queued at
// shutdown.
const traceFlushGrace = 5 * time.Second

// startTraces starts the span exporter tc describes and traces srv's
// requests. It returns stop followed by the exporter's flush: the calls
// have ended by then, so that their spans are in the queue.
func startTraces(srv *mcp.Server, tc *trace.Config, overHTTP bool, version string, log *slog.Logger, stop func()) func() {
	// The exporter's headers (an API key of a tracing service) are
	// secrets: the log masks them wherever they would appear.
	if red := redact.Of(log.Handler()); red != nil {
		red.Add(tc.Secrets()...)
		red.Add(redact.URLSecrets(tc.Exporter.URL)...)
	}
	tr := tc.Start(version, log)
	transport := server.TransportPipe
	if overHTTP {
		transport = server.TransportTCP
	}
	server.AddTracing(srv, tr, transport)
	return func() {
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), traceFlushGrace)
		defer cancel()
		if err := tr.Close(ctx); err != nil {
			log.Warn("traces: spans left unsent at shutdown", "err", err)
		}
		st := tr.Exporter().Stats()
		log.Info("traces: exporter stopped", "sent", st.Sent, "dropped", st.Dropped)
	}
}
