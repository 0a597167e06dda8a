package embedded

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// A lease is a row of the leases table: the session id, a token naming its
// holder (one Lease call) and when it expires unless renewed. A row is
// taken when there is none or when it has expired, so that a holder that
// died (kill -9) frees its lease after LeaseTTL.
//
// Within this process, the Lease calls for one session queue on a channel
// of one token: only the call holding the token asks the database, and
// the others are woken by its release, without polling. That call polls
// the database, with a short capped backoff, only while another process
// holds the lease (SQLite has no way to notify another process).

// localLease is this process's queue for one session's lease.
type localLease struct {
	turn chan struct{} // holds one token while a Lease call here holds or seeks the lease
	refs int           // Lease calls using it; it is forgotten at 0
}

// Poll intervals while another process holds a lease: short at first,
// since turns are often short, then capped.
const (
	firstPoll = 5 * time.Millisecond
	maxPoll   = 100 * time.Millisecond
)

var errClosed = fmt.Errorf("session store: %w: the store is closed", session.ErrUnavailable)

func logger() *slog.Logger { return slog.Default() }

// Lease takes session id's lease, waiting while another holder has it.
func (s *Store) Lease(ctx context.Context, id string) (func(), error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	l := s.local[id]
	if l == nil {
		l = &localLease{turn: make(chan struct{}, 1)}
		s.local[id] = l
	}
	l.refs++
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.local, id)
		}
		s.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		forget()
		return nil, err
	}
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case <-s.closing:
		forget()
		return nil, errClosed
	}
	giveUp := func(err error) (func(), error) {
		<-l.turn
		forget()
		return nil, err
	}

	holder := session.NewUUID()
	wait := firstPoll
	for {
		ok, err := s.tryLease(ctx, id, holder)
		if err != nil {
			return giveUp(err)
		}
		if ok {
			break
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return giveUp(ctx.Err())
		case <-s.closing:
			timer.Stop()
			return giveUp(errClosed)
		}
		wait = min(2*wait, maxPoll, s.opts.LeaseTTL/4)
	}

	s.mu.Lock()
	if s.closed {
		// Close ran meanwhile, without knowing of this lease.
		s.mu.Unlock()
		dctx, cancel := context.WithTimeout(context.Background(), 2*busyTimeout)
		defer cancel()
		_ = s.deleteLease(dctx, id, holder) // the database may be closed already: then the row expires
		return giveUp(errClosed)
	}
	s.held[id] = holder
	s.mu.Unlock()

	released := false
	return func() {
		s.mu.Lock()
		if released {
			s.mu.Unlock()
			return
		}
		released = true
		// The lease is still this call's unless Close gave it back.
		mine := s.held[id] == holder
		if mine {
			delete(s.held, id)
			s.bg.Add(1) // Close waits for the row to go before closing the database
		}
		s.mu.Unlock()
		if mine {
			dctx, cancel := context.WithTimeout(context.Background(), 2*busyTimeout)
			if err := s.deleteLease(dctx, id, holder); err != nil {
				logger().Warn("session store: releasing a lease failed; it frees itself when it expires", "session", id, "err", err)
			}
			cancel()
			s.bg.Done()
		}
		<-l.turn
		forget()
	}, nil
}

const takeLeaseSQL = `INSERT INTO leases (id, holder, expires_at) VALUES (?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
	WHERE leases.expires_at <= ?`

// tryLease takes session id's lease for holder when it is free or expired.
func (s *Store) tryLease(ctx context.Context, id, holder string) (bool, error) {
	var took bool
	err := s.write(ctx, "taking a lease", func(tx *sql.Tx) error {
		now := time.Now()
		res, err := tx.StmtContext(ctx, s.st.takeLease).ExecContext(ctx, id, holder, ms(now.Add(s.opts.LeaseTTL)), ms(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		took = n == 1
		return err
	})
	return took, err
}

const deleteLeaseSQL = `DELETE FROM leases WHERE id = ? AND holder = ?`

// deleteLease gives back holder's lease of session id.
func (s *Store) deleteLease(ctx context.Context, id, holder string) error {
	return s.write(ctx, "releasing a lease", func(tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, s.st.deleteLease).ExecContext(ctx, id, holder)
		return err
	})
}

const renewLeaseSQL = `UPDATE leases SET expires_at = ? WHERE id = ? AND holder = ?`

// renewLeases pushes back the expiry of every lease held here.
func (s *Store) renewLeases() {
	s.mu.Lock()
	held := make(map[string]string, len(s.held))
	for id, holder := range s.held {
		held[id] = holder
	}
	s.mu.Unlock()
	if len(held) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.LeaseTTL)
	defer cancel()
	var lost []string
	err := s.write(ctx, "renewing leases", func(tx *sql.Tx) error {
		lost = lost[:0]
		expires := ms(time.Now().Add(s.opts.LeaseTTL))
		renew := tx.StmtContext(ctx, s.st.renewLease)
		for id, holder := range held {
			res, err := renew.ExecContext(ctx, expires, id, holder)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err == nil && n == 0 {
				lost = append(lost, id)
			}
		}
		return nil
	})
	if err != nil {
		logger().Warn("session store: renewing leases failed; trying again shortly", "err", err)
		return
	}
	for _, id := range lost {
		// The process stalled for longer than LeaseTTL (or a clock jumped):
		// another holder may have the lease now.
		logger().Warn("session store: a lease expired before it was renewed; another turn of the session may run at the same time", "session", id)
	}
}
