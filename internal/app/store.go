package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/embedded"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/redisstore"
)

// openStore opens the session store cfg names: --store, or by default the
// embedded store in the state directory. Its description (the value, any
// password hidden) is for logs and doctor.
//
// With background set (the server), the embedded store's file is checked
// and created at once, and SQLite's open, schema check and clean-up run in
// the background while the server answers its client (session.Opening):
// a call waits for them. When they fail, hooks hear of it, every call
// returns their error, and they are tried again until the store opens.
func openStore(ctx context.Context, cfg *config.Config, background bool, hooks session.OpeningHooks) (st session.Store, where string, err error) {
	raw := cfg.Store.URL
	if raw == "" {
		dir, err := stateDir(cfg)
		if err != nil {
			return nil, "", err
		}
		raw = "sqlite:" + filepath.Join(dir, "sessions.db")
	}
	where = redactStore(raw)
	opts := session.Options{TTL: cfg.Store.TTL, LeaseTTL: session.DefaultLeaseTTL, Prefix: cfg.Store.Prefix}
	scheme, rest, _ := strings.Cut(raw, ":")
	switch strings.ToLower(scheme) {
	case "sqlite":
		// The embedded store, and the default: one SQLite file that
		// several processes on this host may share.
		if rest == "" {
			err = fmt.Errorf("%q names no file: use sqlite:PATH", raw)
			break
		}
		if !background {
			st, err = embedded.Open(rest, opts)
			break
		}
		var abs string
		if abs, err = embedded.Prepare(rest); err != nil {
			break
		}
		st = session.Opening(func() (session.Store, error) {
			s, err := embedded.Open(abs, opts)
			if err != nil {
				return nil, storeError(where, err)
			}
			return s, nil
		}, hooks)
	case "memory":
		// A store in this process's memory: its sessions end with it.
		if rest != "" {
			err = fmt.Errorf("%q: the memory store takes nothing after memory:", raw)
			break
		}
		st = memstore.New(opts)
	case "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel":
		// The store that replicas on several hosts share: one Redis, a
		// Redis Cluster, or the master that sentinels name.
		st, err = redisstore.Open(ctx, raw, opts)
	default:
		return nil, where, fmt.Errorf("--store %s: this server has no %q store; it supports memory:, redis:, rediss:, redis+cluster:, redis+sentinel: (rediss+… for TLS), sqlite:", where, scheme)
	}
	if err != nil {
		return nil, where, storeError(where, err)
	}
	return st, where, nil
}

// storeError is the error of a store that could not be opened.
func storeError(where string, err error) error {
	return fmt.Errorf("opening the session store %s: %w (check --store and --state-dir; gemini-mcp-server doctor checks the store)", where, err)
}

// redactStore hides a password in a store URL, so that logs and errors can
// name the store.
func redactStore(raw string) string {
	if scheme, _, _ := strings.Cut(raw, ":"); strings.Contains(scheme, "+") {
		// A cluster's or sentinels' URL names several hosts, which
		// net/url does not parse.
		return redisstore.Redact(raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if strings.Contains(raw, "@") && strings.Contains(raw, "://") {
			// Unparsable, and it may hold a password: name the scheme only.
			scheme, _, _ := strings.Cut(raw, ":")
			return scheme + "://…"
		}
		return raw
	}
	return u.Redacted()
}

// stateDir is --state-dir, or the user's state directory.
func stateDir(cfg *config.Config) (string, error) {
	if cfg.Store.StateDir != "" {
		return cfg.Store.StateDir, nil
	}
	d, err := session.DefaultDir()
	if err != nil {
		return "", fmt.Errorf("finding a state directory (set --state-dir): %w", err)
	}
	return d, nil
}

// checkStore is doctor's check of the session store: it opens, and takes a
// write. The write is a turn of a session of its own, never listed (it has
// no record), deleted at once.
func checkStore(ctx context.Context, r *report, cfg *config.Config) {
	st, where, err := openStore(ctx, cfg, false, session.OpeningHooks{})
	if err != nil {
		r.fail("session store: %v", err)
		return
	}
	defer st.Close()
	probe := session.NewUUID()
	if err := st.AppendTurn(ctx, probe, json.RawMessage(`{"doctor":true}`)); err != nil {
		r.fail("session store %s is not writable: %v (check --store and --state-dir)", where, err)
		return
	}
	if err := st.Delete(ctx, probe); err != nil {
		r.fail("session store %s: deleting a test write: %v", where, err)
		return
	}
	r.ok("session store: %s", where)
}

// storeHooks logs what becomes of a session store opened in the
// background: the first failure as an error, a failure with another error
// than the one before as a warning (the same one again at debug level, as
// the attempts go on every 30 s at most), and the open that ends them.
func storeHooks(log *slog.Logger) session.OpeningHooks {
	var last string
	return session.OpeningHooks{
		Failed: func(err error, attempt int, retryIn time.Duration) {
			switch {
			case attempt == 1:
				log.Error("the session store could not be opened: sessions are not recorded, and calls that need them fail, until it opens; the server tries again in the background",
					"err", err, "retryIn", retryIn)
			case err.Error() != last:
				log.Warn("the session store still cannot be opened", "err", err, "attempt", attempt, "retryIn", retryIn)
			default:
				log.Debug("the session store still cannot be opened", "err", err, "attempt", attempt, "retryIn", retryIn)
			}
			last = err.Error()
		},
		Opened: func(attempts int) {
			log.Info("the session store is open: sessions are recorded again", "attempts", attempts)
		},
	}
}
