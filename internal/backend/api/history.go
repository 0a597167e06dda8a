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
	// Interaction is the id of the interaction of the Interactions API
	// that answered the turn and that Google keeps (modelinteraction.go),
	// which a next turn may continue by previous_interaction_id; "" for a
	// turn answered by generateContent, or whose interaction was not kept.
	Interaction string `json:"interaction,omitempty"`
}

// history is a conversation as loadHistory reads it.
type history struct {
	// contents are its turns' contents, oldest first.
	contents []*genai.Content
	// refs are the media its turns sent through the Files API, by URI.
	refs map[string]mediaRef
	// ctxParts is the number of parts of the first content that are its
	// stable context.
	ctxParts int
	// model is the model its last turn asked for ("" for turns recorded
	// before it was kept).
	model string
	// interaction is its last turn's Interaction.
	interaction string
}

// loadHistory returns the conversation of session id so far.
func (b *Backend) loadHistory(ctx context.Context, id string) (history, error) {
	raws, ok, err := b.hist.LoadTurns(ctx, id)
	if err != nil {
		return history{}, newError(backend.KindSession, err, "session %s could not be read: %v", id, err)
	}
	if !ok {
		return history{}, newError(backend.KindSession, nil, "no API conversation has id %s: it was never "+
			"started here, or it was started on another backend; start a new one with chat", id)
	}
	h := history{contents: make([]*genai.Content, 0, 2*len(raws)+1)}
	for i, raw := range raws {
		var tr turnRecord
		if err := json.Unmarshal(raw, &tr); err != nil || tr.User == nil || tr.Model == nil {
			return history{}, newError(backend.KindSession, err, "session %s is damaged at turn %d; start a new one with chat", id, i+1)
		}
		for _, m := range tr.Media {
			if h.refs == nil {
				h.refs = map[string]mediaRef{}
			}
			h.refs[m.URI] = m
		}
		if i == 0 && tr.ContextParts > 0 && tr.ContextParts < len(tr.User.Parts) {
			h.ctxParts = tr.ContextParts
		}
		h.contents = append(h.contents, tr.User)
		h.contents = append(h.contents, tr.Exchange...)
		h.contents = append(h.contents, tr.Model)
		h.model, h.interaction = tr.ModelName, tr.Interaction
	}
	return h, nil
}
