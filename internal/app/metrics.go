package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/metrics"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
)

// enableMetrics turns the metrics on when --metrics asks for them, before
// anything that reports to them is built; the function it returns turns
// them off again. With --metrics off it returns nil and nothing counts.
func enableMetrics(cfg *config.Config) (*metrics.Set, func()) {
	if cfg.HTTP.Metrics == "" {
		return nil, func() {}
	}
	tools := cfg.Tools.Served
	if tools == nil {
		tools = server.ToolNames()
	}
	set := metrics.New(tools)
	if cfg.HTTP.Addr != "" && cfg.HTTP.Stateless {
		set.NoSessions()
	}
	metrics.Enable(set)
	return set, func() { metrics.Enable(nil) }
}

// serveMetrics serves set's /metrics on an address of its own (--metrics
// host:port) until the returned stop is called; stop waits for it. With
// --metrics off or on (the --http listener serves it) it does nothing.
func serveMetrics(ctx context.Context, cfg *config.Config, set *metrics.Set, log *slog.Logger) (stop func(), err error) {
	if set == nil || cfg.HTTP.Metrics == config.MetricsOnHTTP {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Metrics)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(server.PathMetrics, set.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not found: metrics are served at "+server.PathMetrics, http.StatusNotFound)
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the metrics listener stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+server.PathMetrics)
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
		<-done
	}, nil
}

// metricsOnHTTP is the /metrics handler of the --http listener (--metrics
// on), or nil.
func metricsOnHTTP(cfg *config.Config) http.Handler {
	if set := metrics.Current(); set != nil && cfg.HTTP.Metrics == config.MetricsOnHTTP {
		return set.Handler()
	}
	return nil
}
