package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// Store keeps everything a session needs, so that any server process
// sharing it can continue any session: the session's record, the API
// backend's conversation turns, the pages of answers too long for one
// result, and a lease that keeps two turns of one session from running at
// once, even in two processes or on two hosts.
//
// Two implementations satisfy it: the embedded store (one SQLite file in
// the state directory, the default; several processes on one host may
// share it) and Redis (for replicas on several hosts). Both pass the same
// conformance suite, internal/session/storetest.
//
// Session ids are lower-case UUIDs; any other id is an error, never a
// lookup. Every method is safe for concurrent use. An error of the store
// itself (the database unreachable, the disk full) wraps ErrUnavailable,
// so that callers can tell it from a bad id.
//
// Retention: a session (record, turns and answers together) expires
// Options.TTL after its last turn; Touch and AppendTurn restart the
// clock. An expired session is as unknown as one never recorded.
type Store interface {
	// Get returns the record of session id; ok is false when there is
	// none (never recorded, deleted or expired).
	Get(ctx context.Context, id string) (r Record, ok bool, err error)

	// Touch records a finished turn of session id: it creates the record
	// on the first turn (keeping t's Owner, Backend, Host, Title and
	// SystemPrompt from then on), counts the turn, sets the cwd, model
	// (when t has one), client and time, and restarts the session's TTL.
	// When it returns, the record is durable: a process killed right after
	// loses nothing of it.
	Touch(ctx context.Context, id string, t Turn, now time.Time) (Record, error)

	// List returns the records f selects, newest Updated first (the
	// lower id first among equal times): it skips the first f.Offset of
	// them and returns at most f.Limit; more says whether others follow.
	// Each store reads the records through an index of the filter's most
	// selective field (client, cwd or owner; all sessions when none is
	// set) in List's order and checks the rest on the way, so that a page
	// costs about its offset and limit, not the sessions stored.
	List(ctx context.Context, f Filter) (recs []Record, more bool, err error)

	// Delete forgets session id: its record, turns and answers. A session
	// that does not exist is not an error.
	Delete(ctx context.Context, id string) error

	// LoadTurns returns the turns recorded for session id, oldest first;
	// ok is false when it has none. A turn is an opaque JSON value, which
	// the API backend defines.
	LoadTurns(ctx context.Context, id string) (turns []json.RawMessage, ok bool, err error)

	// AppendTurn records one more turn of session id, all or nothing, at a
	// cost that does not grow with the conversation's length, and
	// restarts the session's TTL. When it returns the turn is durable (see
	// each implementation for what that survives).
	AppendTurn(ctx context.Context, id string, turn json.RawMessage) error

	// PutAnswer keeps the pages of an answer too long for one result, for
	// chat-page. They expire with their session, and the store may drop
	// the oldest answers to stay within its budget for pages.
	PutAnswer(ctx context.Context, a PagedAnswer) error

	// GetAnswer returns the answer with id a.ID; ok is false when it is
	// unknown, expired or dropped.
	GetAnswer(ctx context.Context, id string) (a PagedAnswer, ok bool, err error)

	// Lease takes session id's lease, waiting while another holder (in
	// this process or another) has it, until ctx ends (then it returns
	// ctx's error and holds nothing). The store renews a held lease while
	// its holder lives; a holder that dies (kill -9, a lost host) loses it
	// after Options.LeaseTTL. release gives it back and may be called more
	// than once.
	Lease(ctx context.Context, id string) (release func(), err error)

	// Close releases the store's resources (connections, files, background
	// work). Leases still held are given back.
	Close() error
}

// PagedAnswer is an answer cut into pages for chat-page.
type PagedAnswer struct {
	ID        string `json:"id"`        // a lower-case UUID
	SessionID string `json:"sessionId"` // "" when the answer has no session
	// Owner is the Owner of the answer's session (see Record.Owner): the
	// only caller who may read its pages when sessions are owned; ""
	// (answers kept by older versions too) is open to all.
	Owner string   `json:"owner,omitempty"`
	Pages []string `json:"pages"`
	// Dropped is how many bytes at the end of an answer larger than the
	// whole budget for pages were not kept.
	Dropped int       `json:"dropped,omitempty"`
	Created time.Time `json:"created"`
}

// Fit returns a within a budget for pages and the bytes of the pages it
// keeps: an answer larger than the whole budget keeps its first pages that
// fit (at least one), and Dropped counts the bytes of the rest. The pages
// kept share a's backing array, with no room to append into it.
func (a PagedAnswer) Fit(budget int) (PagedAnswer, int) {
	kept, n := 0, 0
	for kept < len(a.Pages) && (kept == 0 || n+len(a.Pages[kept]) <= budget) {
		n += len(a.Pages[kept])
		kept++
	}
	for _, p := range a.Pages[kept:] {
		a.Dropped += len(p)
	}
	a.Pages = a.Pages[:kept:kept]
	return a, n
}

// Options are what every store is opened with.
type Options struct {
	// TTL is how long a session lives after its last turn; 0 means
	// config.DefaultSessionTTL.
	TTL time.Duration
	// LeaseTTL is how long a lease outlives its holder's last renewal.
	LeaseTTL time.Duration
	// MaxPagedBytes bounds the bytes of all kept answer pages; the oldest
	// answers go first. 0 means DefaultMaxPagedBytes.
	MaxPagedBytes int
	// Prefix starts every key a shared store (Redis) writes, so that
	// several deployments can share one database. "" means
	// config.DefaultStorePrefix.
	Prefix string
}

// WithDefaults returns o with its unset (zero or negative) fields set to
// the defaults below.
func (o Options) WithDefaults() Options {
	if o.TTL <= 0 {
		o.TTL = config.DefaultSessionTTL
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.MaxPagedBytes <= 0 {
		o.MaxPagedBytes = DefaultMaxPagedBytes
	}
	if o.Prefix == "" {
		o.Prefix = config.DefaultStorePrefix
	}
	return o
}

// Defaults for Options.
const (
	// DefaultLeaseTTL frees a dead holder's lease within seconds.
	DefaultLeaseTTL = 10 * time.Second
	// DefaultMaxPagedBytes matches the default --max-output-bytes: the
	// largest answer a call can return fits.
	DefaultMaxPagedBytes = config.DefaultMaxOutputBytes
)

// ErrUnavailable is wrapped by the errors of a store that cannot be
// reached or written (the Redis server down, the disk full): a system
// failure, not the caller's.
var ErrUnavailable = errors.New("session store unavailable")

// Apply is what Touch does to a record, the same in every store: r is the
// session's record, ok whether it has one; the result is the record after
// turn t at now. A new record keeps t's Owner, Backend, Host, Title and
// SystemPrompt from then on.
func Apply(r Record, ok bool, id string, t Turn, now time.Time) Record {
	if !ok {
		r = Record{ID: id, Created: now, Owner: t.Owner, Backend: t.Backend,
			Title: t.Title, Host: t.Host, SystemPrompt: t.SystemPrompt}
	}
	r.Cwd = t.Cwd
	if t.Model != "" {
		r.Model = t.Model
	}
	r.LastClient = t.Client
	r.Updated = now
	r.Turns++
	return r
}

// Filter selects the records Store.List returns: those that every field
// set (not empty) accepts, all of them when none is set.
type Filter struct {
	// Owner, when ByOwner, keeps the records Owner started and those
	// without an owner, which are open to all (see Record.Owner). Owner ""
	// with ByOwner keeps only the records without an owner.
	Owner   string
	ByOwner bool
	// Client keeps the records whose latest turn Client ran (LastClient).
	Client string
	// Cwd keeps the records whose cwd is Cwd.
	Cwd string
	// Backend keeps the records of that backend family (Record.Family:
	// "cli" includes the records that name none).
	Backend string
	// Host, when ByHost, keeps the records of Host and those that name
	// no host.
	Host   string
	ByHost bool
	// Offset is how many of the selected records to skip, newest first;
	// Limit how many to return at most. Neither may be negative.
	Offset, Limit int
}

// Match reports whether f selects r (Offset and Limit aside): what the
// stores' indexed queries answer, for stores that filter in Go.
func (f Filter) Match(r Record) bool {
	return (!f.ByOwner || r.Owner == "" || r.Owner == f.Owner) &&
		(f.Client == "" || r.LastClient == f.Client) &&
		(f.Cwd == "" || r.Cwd == f.Cwd) &&
		(f.Backend == "" || r.Family() == f.Backend) &&
		(!f.ByHost || r.Host == "" || r.Host == f.Host)
}

// Check refuses a negative offset or limit.
func (f Filter) Check() error {
	if f.Offset < 0 || f.Limit < 0 {
		return fmt.Errorf("session store: offset %d and limit %d must not be negative", f.Offset, f.Limit)
	}
	return nil
}

// Latest returns the most recently updated record f selects (f's Offset
// and Limit aside).
func Latest(ctx context.Context, s Store, f Filter) (Record, bool, error) {
	f.Offset, f.Limit = 0, 1
	recs, _, err := s.List(ctx, f)
	if err != nil || len(recs) == 0 {
		return Record{}, false, err
	}
	return recs[0], true, nil
}
