package app

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// stubSweeper fails its first sweep, as when the API cannot be reached,
// and deletes one store at each after.
type stubSweeper struct {
	mu    sync.Mutex
	calls int
}

func (s *stubSweeper) Sweep(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls == 1 {
		return 0, errors.New("dial tcp: connection refused")
	}
	return 1, nil
}

func (s *stubSweeper) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// TestFileSearchSweepRetries: a sweep that fails is logged and the next
// runs an interval later; the loop ends with its context.
func TestFileSearchSweepRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The sweep logs from its own goroutine; the bubble's fake clock
		// orders that write after the test's read, but not for the race
		// detector: the buffer has its lock.
		logged := &geminitest.LockedBuffer{}
		sw := &stubSweeper{}
		fs := &fileSearch{sweeper: sw, ttl: 2 * time.Hour, log: slog.New(slog.NewTextHandler(logged, nil))}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			fs.sweep(ctx, sweepInterval(fs.ttl))
		}()
		time.Sleep(sweepInterval(fs.ttl) + time.Second)
		synctest.Wait()
		if sw.count() != 1 || !strings.Contains(logged.String(), "sweeping unused stores failed; trying again later") {
			t.Fatalf("after one interval: %d sweeps, log %q", sw.count(), logged.String())
		}
		time.Sleep(sweepInterval(fs.ttl))
		synctest.Wait()
		if sw.count() != 2 || !strings.Contains(logged.String(), "deleted stores unused for the TTL") {
			t.Fatalf("after two intervals: %d sweeps, log %q", sw.count(), logged.String())
		}
		cancel()
		<-done
	})
	if got := sweepInterval(7 * 24 * time.Hour); got != time.Hour {
		t.Errorf("a week's TTL is swept every %v, want hourly", got)
	}
	if got := sweepInterval(time.Minute); got != time.Minute {
		t.Errorf("a minute's TTL is swept every %v, want each minute", got)
	}
}

// TestStartStopsFileSearchSweep: the server sweeps the API backend's File
// Search stores while it runs, and its stop ends the sweep.
func TestStartStopsFileSearchSweep(t *testing.T) {
	opts := []leaktest.Option{leaktest.IgnoreCurrent()}
	savedAPI, savedFS := newAPIBackend, fileSearchOf
	t.Cleanup(func() { newAPIBackend, fileSearchOf = savedAPI, savedFS })
	newAPIBackend = func(*config.Config, func(string) string, session.Store, backend.ToolHost, *slog.Logger) (backend.Backend, backend.TokenCounter, error) {
		return &stubAPI{}, &stubCounter{}, nil
	}
	var fs *fileSearch
	fileSearchOf = func(cfg *config.Config, _ session.Store, _ backend.TokenCounter, _ []string, log *slog.Logger) (*fileSearch, error) {
		fs = &fileSearch{sweeper: &stubSweeper{}, ttl: cfg.API.FileSearchTTL, log: log}
		return fs, nil
	}
	root := t.TempDir()
	cfg := parse(t, "--backend", "api", "--store", "memory:", "--cwd", root, "--project-root", root, "--file-search-ttl", "3h")
	s, err := start(geminitest.Context(t), cfg, IO{Getenv: func(string) string { return "" }}.env(), "test", nil, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if fs == nil || s.deps.fileSearch != fs || fs.ttl != 3*time.Hour {
		t.Fatalf("the server's File Search %+v, want the one built with --file-search-ttl 3h", s.deps.fileSearch)
	}
	s.stop()
	leaktest.VerifyNone(t, opts...)
}
