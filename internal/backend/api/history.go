package api

import (
	"context"
	"encoding/json"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// History keeps the turns of the API backend's conversations. The session
// store implements it (session.Store). A turn is an opaque JSON value to
// it. Implementations must be safe for concurrent use.
type History interface {
	// LoadTurns returns the turns of session id, oldest first; ok is false
	// when the session has none. An id that is not a lower-case UUID is an
	// error.
	LoadTurns(ctx context.Context, id string) (turns []json.RawMessage, ok bool, err error)
	// AppendTurn records one more turn of session id, durably, all or
	// nothing.
	AppendTurn(ctx context.Context, id string, turn json.RawMessage) error
}

// turnRecord is one turn as History keeps it.
type turnRecord struct {
	User *genai.Content `json:"user"`
	// ContextParts is the number of User's first parts that are the
	// turn's stable context (Turn.ContextLen), which a context cache may
	// hold; the others are the prompt and its media.
	ContextParts int `json:"contextParts,omitempty"`
	// Exchange is what came between the prompt and the answer when Gemini
	// called tools: each of its answers with function calls, then the
	// results sent back, in order. Turns recorded before tools existed
	// have none.
	Exchange []*genai.Content `json:"exchange,omitempty"`
	Model    *genai.Content   `json:"model"`
	// Media are the media files User sent through the Files API (those
	// sent inline are in User itself).
	Media []mediaRef `json:"media,omitempty"`
	// ModelName is the model the turn asked for (an alias resolved): a
	// next turn that names none asks it again. ModelVersion is the model
	// that answered, as the API named it.
	ModelName    string         `json:"modelName,omitempty"`
	ModelVersion string         `json:"modelVersion,omitempty"`
	Time         time.Time      `json:"time"`
	Usage        *backend.Usage `json:"usage,omitempty"`
}

// loadHistory returns the contents of session id so far, the media its
// turns sent through the Files API, by URI, the number of parts of the
// first content that are its stable context, and the model its last turn
// asked for ("" for turns recorded before it was kept).
func (b *Backend) loadHistory(ctx context.Context, id string) ([]*genai.Content, map[string]mediaRef, int, string, error) {
	raws, ok, err := b.hist.LoadTurns(ctx, id)
	if err != nil {
		return nil, nil, 0, "", newError(backend.KindSession, err, "session %s could not be read: %v", id, err)
	}
	if !ok {
		return nil, nil, 0, "", newError(backend.KindSession, nil, "no API conversation has id %s: it was never "+
			"started here, or it was started on another backend; start a new one with chat", id)
	}
	var refs map[string]mediaRef
	ctxParts := 0
	model := ""
	contents := make([]*genai.Content, 0, 2*len(raws)+1)
	for i, raw := range raws {
		var tr turnRecord
		if err := json.Unmarshal(raw, &tr); err != nil || tr.User == nil || tr.Model == nil {
			return nil, nil, 0, "", newError(backend.KindSession, err, "session %s is damaged at turn %d; start a new one with chat", id, i+1)
		}
		for _, m := range tr.Media {
			if refs == nil {
				refs = map[string]mediaRef{}
			}
			refs[m.URI] = m
		}
		if i == 0 && tr.ContextParts > 0 && tr.ContextParts < len(tr.User.Parts) {
			ctxParts = tr.ContextParts
		}
		contents = append(contents, tr.User)
		contents = append(contents, tr.Exchange...)
		contents = append(contents, tr.Model)
		model = tr.ModelName
	}
	return contents, refs, ctxParts, model, nil
}
