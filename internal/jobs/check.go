package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Bounds of a job's parts. A job is stored whole on every change, so each
// part is capped: the record of a job is at most a little over
// MaxResultBytes+MaxPartialBytes.
const (
	// MaxResultBytes caps the JSON of a job's result: that of the
	// synchronous call, which is one page of an answer (the default
	// --max-answer-bytes is 60000) with its structured copy and links,
	// and the images Gemini's code made, inline, up to all a turn may
	// stream (--max-output-bytes, 32 MiB by default, their base64 as it
	// came), with room for the rest. A result over this cap (a turn of a
	// server whose --max-output-bytes is raised) is refused (Complete),
	// not cut. SQLite (a value up to 1e9 bytes) and Redis (512 MB) keep
	// it; it is written once, at the job's end.
	MaxResultBytes = config.DefaultMaxOutputBytes + 16<<20
	// MaxPartialBytes caps the partial output kept while a job runs: its
	// first bytes are kept, PartialDropped counts the rest.
	MaxPartialBytes = 64 << 10
	// MaxPartialTailBytes caps the live output of a running job (an
	// answer as it streams, a research's thought summaries): its last
	// bytes are kept, PartialDropped counts those before them.
	MaxPartialTailBytes = 8 << 10
	// MaxMessageBytes caps a progress or status message, MaxErrorBytes a
	// job's error, MaxResumeBytes a backend's resume handle and
	// MaxToolBytes a tool's name.
	MaxMessageBytes = 1 << 10
	MaxErrorBytes   = 16 << 10
	MaxResumeBytes  = 1 << 10
	MaxToolBytes    = 128
	// MaxOwnerBytes caps an owner key (a token id, an OAuth subject).
	MaxOwnerBytes = 1 << 10
	// MaxRPCErrorBytes caps the JSON of a failed job's JSON-RPC error.
	MaxRPCErrorBytes = 32 << 10
	// MaxResultMetaBytes caps ResultMeta: research's notes on the files
	// it was started with (at most a few hundred paths).
	MaxResultMetaBytes = 256 << 10
)

// Check reports what is wrong with j as a record a store may keep: an id
// that is not a lower-case UUID, an unknown status, a part over its cap,
// a TTL under a millisecond, a result or error where the status has none.
func (j Job) Check() error {
	if err := CheckID(j.ID); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("job %s: "+format, append([]any{j.ID}, args...)...)
	}
	switch {
	case !j.Status.Valid():
		return bad("unknown status %q", clip(string(j.Status)))
	case len(j.Owner) > MaxOwnerBytes:
		return bad("the owner's %d bytes are over %d", len(j.Owner), MaxOwnerBytes)
	case j.Tool == "" || len(j.Tool) > MaxToolBytes:
		return bad("a tool's name must have 1 to %d bytes, not %d", MaxToolBytes, len(j.Tool))
	case j.TTL < time.Millisecond:
		return bad("a TTL of %v is under a millisecond", j.TTL)
	case j.Created.IsZero() || j.Updated.Before(j.Created) || !j.Expires.Equal(j.Updated.Add(j.TTL)):
		return bad("its times are not those of its lifecycle (created %v, updated %v, expires %v, TTL %v)", j.Created, j.Updated, j.Expires, j.TTL)
	case len(j.Message) > MaxMessageBytes, len(j.Partial) > MaxPartialBytes, len(j.Error) > MaxErrorBytes,
		len(j.Resume) > MaxResumeBytes, len(j.Result) > MaxResultBytes, len(j.RPCError) > MaxRPCErrorBytes,
		len(j.ResultMeta) > MaxResultMetaBytes,
		j.Runner != nil && (len(j.Runner.Node) > MaxOwnerBytes || len(j.Runner.Run) > MaxOwnerBytes):
		return bad("a part is over its cap")
	case (j.Status == Completed) != (len(j.Result) > 0):
		return bad("a result belongs to a completed job, and a completed job has one")
	case (j.Status == Failed) != (j.Error != ""):
		return bad("an error belongs to a failed job, and a failed job has one")
	case len(j.RPCError) > 0 && (j.Status != Failed || !json.Valid(j.RPCError)):
		return bad("a JSON-RPC error belongs to a failed job, as JSON")
	case len(j.ResultMeta) > 0 && !jsonObject(j.ResultMeta):
		return bad("the result's _meta entries are not a JSON object")
	case j.Progress < 0 || j.Total < 0:
		return bad("negative counters")
	}
	return nil
}

// CheckID accepts the ids jobs are named by: lower-case UUIDs.
func CheckID(id string) error {
	if !session.IsUUID(id) || strings.ToLower(id) != id {
		return fmt.Errorf("job id %q is not a job id: want a lower-case UUID", clip(id))
	}
	return nil
}

// jsonObject says whether data is one JSON object.
func jsonObject(data []byte) bool {
	data = bytes.TrimSpace(data)
	return len(data) > 0 && data[0] == '{' && json.Valid(data)
}
