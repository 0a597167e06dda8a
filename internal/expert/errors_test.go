package expert

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

func TestValidationErrorsOnTheWire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		fields []string // in data.validation_errors
	}{
		{"analyze", map[string]any{"files": []string{"a.go"}}, []string{"question"}},
		{"analyze", map[string]any{}, []string{"files", "question"}},
		{"analyze", map[string]any{"files": "a.go", "question": "q", "analysis_type": "deep"}, []string{"files", "analysis_type"}},
		{"codereview", map[string]any{"files": []string{"a.go"}, "context": "c", "severity": "high"}, []string{"severity"}},
		{"debug", map[string]any{"error_description": " "}, []string{"error_description"}},
		{"thinkdeep", map[string]any{"current_analysis": "x", "thinking_mode": "huge", "temperature": 3}, []string{"thinking_mode", "temperature"}},
		{"precommit", map[string]any{"path": ".", "include_staged": "yes"}, []string{"include_staged"}},
		{"precommit", map[string]any{"path": ".", "include_staged": false, "include_unstaged": false}, []string{"include_staged"}},
		{"analyze", map[string]any{"files": []string{"a.go"}, "question": "q", "continuation_id": "not-an-id"}, []string{"continuation_id"}},
		{"analyze", map[string]any{"files": []string{"a.go"}, "question": "q", "continuation_id": session.NewUUID()}, []string{"continuation_id"}},
		// Blank is not absent: it starts no new thread.
		{"analyze", map[string]any{"files": []string{"a.go"}, "question": "q", "continuation_id": " "}, []string{"continuation_id"}},
		{"thinkdeep", map[string]any{"current_analysis": "x", "continuation_id": "\u00a0"}, []string{"continuation_id"}},
		{"debug", map[string]any{"error_description": "x", "continuation_id": "\n\t"}, []string{"continuation_id"}},
	} {
		_, err := h.call(t, tc.tool, tc.args)
		we := wireErr(t, err)
		if we.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(we.Message, "Invalid params: ") {
			t.Errorf("%s %v: code %d message %q", tc.tool, tc.args, we.Code, we.Message)
		}
		var data struct {
			Errors []toolerr.FieldError `json:"validation_errors"`
		}
		if err := json.Unmarshal(we.Data, &data); err != nil {
			t.Fatalf("data %s: %v", we.Data, err)
		}
		var fields []string
		for _, e := range data.Errors {
			fields = append(fields, e.Field)
			if e.Error == "" {
				t.Errorf("%s: field %s without a message", tc.tool, e.Field)
			}
		}
		if strings.Join(fields, ",") != strings.Join(tc.fields, ",") {
			t.Errorf("%s %v: fields %v, want %v (%s)", tc.tool, tc.args, fields, tc.fields, we.Data)
		}
	}
	if n := h.backend.count(); n != 0 {
		t.Fatalf("%d turns ran on invalid calls", n)
	}
}

func TestSecurityErrorOnTheWire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	_, err := h.call(t, "analyze", map[string]any{"files": []string{"a.go", "/etc/passwd"}, "question": "q"})
	we := wireErr(t, err)
	if we.Code != -32001 || !strings.Contains(we.Message, "/etc/passwd") || !strings.Contains(we.Message, "inside the project root") {
		t.Fatalf("code %d message %q", we.Code, we.Message)
	}
	if !strings.Contains(string(we.Data), `"field":"files"`) {
		t.Errorf("data %s", we.Data)
	}
	if h.backend.count() != 0 {
		t.Fatal("the turn ran")
	}
}

func TestToolFailureOnTheWire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	h.backend.err = &backend.Error{Kind: backend.KindAPI, Reason: "the Gemini API refused the key: check GEMINI_API_KEY"}
	_, err := h.call(t, "debug", map[string]any{"error_description": "it crashes"})
	we := wireErr(t, err)
	if we.Code != jsonrpc.CodeInternalError || we.Message != "Tool failure: the Gemini API refused the key: check GEMINI_API_KEY" {
		t.Fatalf("code %d message %q", we.Code, we.Message)
	}
}

func TestSystemErrorWithoutFileContext(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", func(d *Deps) { d.Files = nil })
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"analyze", map[string]any{"files": []string{"a.go"}, "question": "q"}},
		{"precommit", map[string]any{"path": "."}},
	} {
		_, err := h.call(t, tc.tool, tc.args)
		we := wireErr(t, err)
		if we.Code != -32000 || !strings.Contains(we.Message, "ask its operator") {
			t.Errorf("%s: code %d message %q", tc.tool, we.Code, we.Message)
		}
	}
	// Without files, no file context is needed.
	h.mustCall(t, "debug", map[string]any{"error_description": "it crashes"})
}

// downStore is a session store that is down.
type downStore struct{ session.Store }

func (downStore) Get(context.Context, string) (session.Record, bool, error) {
	return session.Record{}, false, fmt.Errorf("redis: connection refused: %w", session.ErrUnavailable)
}

func TestSystemErrorWhenStoreDown(t *testing.T) {
	t.Parallel()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	h := newHarnessOn(t, "api", downStore{store}, nil, nil)
	_, err := h.call(t, "analyze", map[string]any{"files": []string{"a.go"}, "question": "q", "continuation_id": session.NewUUID()})
	we := wireErr(t, err)
	if we.Code != -32000 || !strings.Contains(we.Message, "can be retried") {
		t.Fatalf("code %d message %q", we.Code, we.Message)
	}
	if h.backend.count() != 0 {
		t.Fatal("the turn ran")
	}
}

// blockingTurns is a pipeline whose turns run until their context ends,
// as a Gemini that never answers.
type blockingTurns struct{}

func (blockingTurns) Do(ctx context.Context, _ conversation.Request) (*mcp.CallToolResult, error) {
	<-ctx.Done()
	return nil, &backend.Error{Kind: backend.KindTimeout, Reason: "Gemini did not answer in time", Err: ctx.Err()}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d := &Deps{Turns: blockingTurns{}, CallTimeout: 300 * time.Second}
		addAll(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), d)
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "debug", Arguments: json.RawMessage(`{"error_description":"x"}`)}}
		start := time.Now()
		_, err := d.handler(specByName("debug"))(context.Background(), req)
		if elapsed := time.Since(start); elapsed != 300*time.Second {
			t.Errorf("stopped after %v", elapsed)
		}
		we := wireErr(t, err)
		if we.Code != jsonrpc.CodeInternalError || !strings.Contains(we.Message, "limit of 5m0s per call") {
			t.Fatalf("code %d message %q", we.Code, we.Message)
		}
	})
}

// fullStore records no turn: its disk is full.
type fullStore struct{ session.Store }

func (fullStore) Touch(context.Context, string, session.Turn, time.Time) (session.Record, error) {
	return session.Record{}, fmt.Errorf("disk full: %w", session.ErrUnavailable)
}

// TestAnswerKeptWhenSessionUnsaved: an answer Gemini gave is returned
// even when the store could not record the turn, with a note saying so.
func TestAnswerKeptWhenSessionUnsaved(t *testing.T) {
	t.Parallel()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	h := newHarnessOn(t, "api", fullStore{store}, nil, nil)
	res, err := h.call(t, "debug", map[string]any{"error_description": "it crashes"})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	if len(res.Content) != 2 || !strings.Contains(res.Content[1].(*mcp.TextContent).Text, "could not be saved") || res.Meta["sessionSaved"] != false {
		t.Fatalf("content %d items, meta %v", len(res.Content), res.Meta)
	}
	if !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "answer 1\n\n## Metadata") {
		t.Errorf("answer %q", res.Content[0].(*mcp.TextContent).Text)
	}
}
