package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
)

// A turn may run as a model interaction of the Interactions API (package
// interact) rather than through generateContent, chosen per turn by
// interactionTurn:
//
//   - a model that the model list offers an interactions method for
//     (an action whose name holds "interaction", as the fake API's
//     createInteraction) and not generateContent is served there alone
//     (Deep Think and the like): its turns run there as background
//     interactions, polled to their end. This is read from the list the
//     API answers, not from names compiled in;
//   - with Options.ServerHistory (--api-server-history), a plain text
//     turn (no media, no built-in tools, no thinking_mode or temperature,
//     no MCP tools: an interactions-only model takes thinking_mode as a
//     thinking_level, but a model that generates keeps its own mapping)
//     runs there too, continuing the conversation's last turn by its
//     stored interaction (previous_interaction_id) and sending only the
//     new turn, when that turn was itself an interaction on the same
//     model.
//
// Either way the session store stays the record of the conversation: every
// turn is kept in it as a generateContent turn is (the prompt and the
// answer's text), with the id of its interaction when Google keeps it. A
// turn with no stored interaction to continue, or whose interaction Google
// no longer has (past its retention, deleted, or made with another key, as
// on a replica with another key) resends the conversation from the store,
// as text, and says so in the answer's notes.
//
// Without ServerHistory the background interactions of an
// interactions-only model (which the API keeps, as a background
// interaction must be kept to be polled) are deleted once their answer is
// read, so that Google keeps none of the conversation past the call.

// defaultInteractionPoll is the time between polls of a background
// interaction when Options.InteractionPoll is 0.
const defaultInteractionPoll = 2 * time.Second

// cancelGrace bounds the cancel or delete of an interaction sent after its
// call ended.
const cancelGrace = 10 * time.Second

// interactionTurn says whether turn t on the model mi describes runs as a
// model interaction, and whether in the background.
func (b *Backend) interactionTurn(t backend.Turn, mi modelInfo, known bool) (background, use bool) {
	if known && mi.interactions && !mi.generates {
		return true, true
	}
	if !b.serverHistory || known && !mi.generates || t.Image != nil || t.ThinkingMode != "" || t.Temperature != nil ||
		notSentToInteractions(t) != "" || b.tools != nil && len(b.tools.Tools()) > 0 {
		return false, false
	}
	return false, true
}

// notSentToInteractions names what of turn t a model interaction does not
// carry here, "" for nothing.
func notSentToInteractions(t backend.Turn) string {
	var what []string
	if len(t.Media) > 0 {
		what = append(what, "media files")
	}
	if t.GoogleSearch {
		what = append(what, "google_search")
	}
	if len(t.URLs) > 0 {
		what = append(what, "urls")
	}
	if len(t.ResponseSchema) > 0 {
		what = append(what, "response_schema")
	}
	if t.CodeExecution {
		what = append(what, "code_execution")
	}
	if len(t.FileSearchStores) > 0 {
		what = append(what, "file search")
	}
	if t.Image != nil {
		what = append(what, "images")
	}
	return strings.Join(what, ", ")
}

// interactionThinking maps a thinking mode onto the Interactions API's
// thinking_level (minimal, low, medium, high): the modes of the same
// names are sent as they are, "max" as high and "off" as minimal, the
// least the API names (it has no level that stops thinking); note says
// what was changed. Which levels each model takes the API does not list:
// a level the model refuses is the API's 400, quoted to the caller.
func interactionThinking(mode, model string) (level, note string) {
	switch mode {
	case "":
		return "", ""
	case "max":
		return "high", "thinking_mode: max sent as high, the most the Interactions API, where " + model + " runs, names"
	case "off":
		return "minimal", "thinking_mode: off sent as minimal, the least the Interactions API, where " + model +
			" runs, names: it cannot turn thinking off"
	}
	return mode, ""
}

// interactionCall is a turn that runs as a model interaction.
type interactionCall struct {
	id         string // the session
	fresh      bool
	t          backend.Turn
	model      string
	background bool
	user       *genai.Content // the turn's user content, as recorded
	userCtx    int            // its parts of stable context
	earlier    []*genai.Content
	prev       string // the last turn's stored interaction, "" for none
	prevModel  string // the model of the last turn
	obs        backend.Observer
}

// runInteraction runs c as a model interaction and records it.
func (b *Backend) runInteraction(parent, ctx context.Context, c interactionCall) (*backend.Answer, error) {
	t := c.t
	if what := notSentToInteractions(t); what != "" {
		return nil, newError(backend.KindInput, nil, "model %q is served on the Gemini Interactions API alone, where this "+
			"server sends the conversation's text only: %s cannot go with it; leave them out, or choose another model", c.model, what)
	}
	// The model list was read for this turn: this is its cached answer.
	if mi, found, known, err := b.models.lookup(ctx, c.model); err == nil && known && found && mi.inputLimit > 0 {
		// The model reads the whole conversation, also when Google keeps
		// it: the text resent, or kept, and the new turn.
		var system *genai.Content
		if t.SystemPrompt != "" {
			system = genai.NewContentFromText(t.SystemPrompt, genai.RoleUser)
		}
		if err := b.checkFits(parent, ctx, c.model, mi.inputLimit, system, append(contents(messages(c.earlier)), c.user)); err != nil {
			return nil, err
		}
	}
	ic, err := b.Interactions()
	if err != nil {
		return nil, err
	}
	var notes []string
	if t.Temperature != nil {
		notes = append(notes, "temperature: not sent to the Interactions API, where "+c.model+" runs (the API is retiring it)")
	}
	level, note := interactionThinking(t.ThinkingMode, c.model)
	if note != "" {
		notes = append(notes, note)
	}
	if b.tools != nil && len(b.tools.Tools()) > 0 {
		notes = append(notes, "MCP tools: not offered to "+c.model+", which runs on the Interactions API")
	}
	var input strings.Builder
	for _, p := range c.user.Parts {
		input.WriteString(p.Text)
	}
	req := interact.ModelRequest{Model: c.model, Input: input.String(), SystemInstruction: t.SystemPrompt,
		Background: c.background, ThinkingSummaries: t.IncludeThoughts, ThinkingLevel: level}
	if b.serverHistory && c.prev != "" && c.prevModel == c.model {
		req.PreviousID = c.prev
	} else {
		req.History = messages(c.earlier)
	}
	c.obs.Started()
	r, err := b.startInteraction(parent, ctx, ic, req)
	if err != nil && req.PreviousID != "" && ctx.Err() == nil && continuedGone(err) {
		b.log.Info("gemini api: the stored interaction could not be continued; the conversation is resent from the session store",
			"session", c.id, "interaction", req.PreviousID, "err", err)
		notes = append(notes, fmt.Sprintf("server-side history: the Gemini API no longer has interaction %s, which this "+
			"conversation continued, so the conversation was resent from this server's session store", req.PreviousID))
		req.PreviousID, req.History = "", messages(c.earlier)
		r, err = b.startInteraction(parent, ctx, ic, req)
	}
	if err != nil {
		return nil, b.interactionError(parent, ctx, err)
	}
	if !r.Status.Done() {
		c.obs.Activity("Gemini is working in the background (interaction " + r.ID + ")")
		id := r.ID
		r, err = ic.Wait(ctx, id, interact.WaitOptions{Interval: b.interactionPoll, Progress: func(p *interact.Result) {
			if n := len(p.Thoughts); n > 0 {
				c.obs.Activity("thinking: " + clipText(p.Thoughts[n-1], maxActivityBytes))
			}
		}})
		if err != nil {
			if ctx.Err() != nil {
				b.stopInteraction(parent, ic, id)
			}
			return nil, b.interactionError(parent, ctx, err)
		}
	}
	if err := b.interactionEnd(r); err != nil {
		b.forgetInteraction(parent, ic, r.ID)
		return nil, err
	}
	kept := ""
	if b.serverHistory {
		kept = r.ID
	} else {
		b.forgetInteraction(parent, ic, r.ID)
	}
	return b.recordInteraction(parent, c, r, kept, notes), nil
}

// startInteraction creates the interaction of req. A background one is
// created apart from the call's end, so that its id is known: a call that
// ended meanwhile cancels it rather than leave it running at Google.
func (b *Backend) startInteraction(parent, ctx context.Context, ic *interact.Client, req interact.ModelRequest) (*interact.Result, error) {
	if !req.Background {
		return ic.StartModel(ctx, req)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	r, err := ic.StartModel(cctx, req)
	if err == nil && ctx.Err() != nil {
		b.stopInteraction(parent, ic, r.ID)
		return nil, context.Cause(ctx)
	}
	return r, err
}

// createTimeout bounds the create of a background interaction, which
// answers at once, queued.
const createTimeout = time.Minute

// interactionEnd is the error of an interaction that ended without a whole
// answer, with what it produced so far; nil for a whole answer.
func (b *Backend) interactionEnd(r *interact.Result) *backend.Error {
	if err := r.Err(); err != nil {
		e := newError(backend.KindFailed, err, "the Gemini API's %v", err)
		if r.Text != "" {
			e.Reason += ". What it produced before it stopped:\n" + clipText(r.Text, maxPartialBytes)
		}
		return e
	}
	if strings.TrimSpace(r.Text) == "" {
		return newError(backend.KindEmpty, nil, "the Gemini API's interaction %s completed with no text; try again", r.ID)
	}
	if len(r.Text) > b.maxOut {
		return newError(backend.KindOutputTooBig, nil, "the Gemini API's interaction %s answered %d bytes, more than "+
			"the %d this server takes (--max-output-bytes); ask for less at once", r.ID, len(r.Text), b.maxOut)
	}
	return nil
}

// maxPartialBytes bounds what a stopped interaction produced, as its
// error shows it; maxActivityBytes a thought summary as progress.
const (
	maxPartialBytes  = 16 << 10
	maxActivityBytes = 300
)

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "… (cut)"
}

// recordInteraction records the turn answered by r in the session, with
// kept, the interaction Google keeps ("" for none), and returns its
// answer.
func (b *Backend) recordInteraction(parent context.Context, c interactionCall, r *interact.Result, kept string, notes []string) *backend.Answer {
	model := c.model
	if r.Model != "" {
		model = shortName(r.Model)
	}
	var usage *backend.Usage
	if u := r.Usage; u != (interact.Usage{}) {
		usage = &backend.Usage{PromptTokens: u.Input, OutputTokens: u.Output, ThinkingTokens: u.Thought,
			ToolUsePromptTokens: u.ToolUse, TotalTokens: u.Total}
	}
	ans := &backend.Answer{SessionID: c.id, Text: r.Text, Usage: usage, NotApplied: notes, Model: model, Via: "api",
		Interaction: kept}
	if c.t.IncludeThoughts {
		ans.Thoughts = strings.Join(r.Thoughts, "\n\n")
	}
	if r.Truncated {
		ans.NotApplied = append(ans.NotApplied, "the Gemini API's interaction held more steps or text than this server reads; some were left out")
	}
	rec, err := json.Marshal(turnRecord{User: c.user, ContextParts: c.userCtx,
		Model: genai.NewContentFromText(r.Text, genai.RoleModel), ModelName: c.model, ModelVersion: model,
		Time: time.Now().UTC(), Usage: usage, Interaction: kept})
	if err == nil {
		err = b.hist.AppendTurn(context.WithoutCancel(parent), c.id, rec)
	}
	if err != nil {
		b.log.Error("gemini api: the turn could not be recorded", "session", c.id, "err", err)
		ans.Unsaved = err
		if c.fresh {
			ans.SessionID = ""
		}
	}
	return ans
}

// messages is the text of a conversation's contents, to resend: each
// content's text parts (thoughts left out), contents of one role in a row
// joined, and those with no text (function calls and their results) left
// out.
func messages(contents []*genai.Content) []interact.Message {
	var out []interact.Message
	for _, c := range contents {
		if c == nil {
			continue
		}
		var text strings.Builder
		for _, p := range c.Parts {
			if p != nil && !p.Thought {
				text.WriteString(p.Text)
			}
		}
		if text.Len() == 0 {
			continue
		}
		m := interact.Message{Model: c.Role == genai.RoleModel, Text: text.String()}
		if n := len(out); n > 0 && out[n-1].Model == m.Model {
			out[n-1].Text += "\n\n" + m.Text
			continue
		}
		out = append(out, m)
	}
	return out
}

// contents is the conversation of ms, as generateContent's contents.
func contents(ms []interact.Message) []*genai.Content {
	out := make([]*genai.Content, 0, len(ms)+1)
	for _, m := range ms {
		role := genai.Role(genai.RoleUser)
		if m.Model {
			role = genai.RoleModel
		}
		out = append(out, genai.NewContentFromText(m.Text, role))
	}
	return out
}

// continuedGone says whether err is the API's refusal of an interaction
// to be continued: not found (past its retention, deleted) or not the
// key's (made with another key).
func continuedGone(err error) bool {
	var ae *interact.APIError
	return errors.Is(err, interact.ErrNotFound) ||
		errors.As(err, &ae) && (ae.HTTPStatus == http.StatusNotFound || ae.HTTPStatus == http.StatusForbidden)
}

// interactionError is the *backend.Error of an Interactions API call's
// error.
func (b *Backend) interactionError(parent, ctx context.Context, err error) *backend.Error {
	var be *backend.Error
	if errors.As(err, &be) {
		return be
	}
	if ctx.Err() != nil {
		return contextError(parent, b.timeout)
	}
	msg := b.maskKey(err.Error())
	var ae *interact.APIError
	if errors.As(err, &ae) {
		kind := backend.KindAPI
		if ae.HTTPStatus == http.StatusUnauthorized || ae.HTTPStatus == http.StatusForbidden {
			kind = backend.KindAuth
		}
		e := newError(kind, err, "the Gemini Interactions API refused the turn: %s", msg)
		e.Status = ae.HTTPStatus
		return e
	}
	return newError(backend.KindFailed, err, "the Gemini Interactions API: %s", msg)
}

// stopInteraction cancels the background interaction of id after its call
// ended, so that Google stops working (and billing) for no one.
func (b *Backend) stopInteraction(parent context.Context, ic *interact.Client, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), cancelGrace)
	defer cancel()
	if _, err := ic.Cancel(ctx, id); err != nil {
		b.log.Warn("gemini api: the interaction of a call that ended could not be cancelled", "interaction", id, "err", b.maskKey(err.Error()))
	}
}

// forgetInteraction deletes the stored interaction of id, which no turn
// will continue.
func (b *Backend) forgetInteraction(parent context.Context, ic *interact.Client, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), cancelGrace)
	defer cancel()
	if err := ic.Delete(ctx, id); err != nil && !errors.Is(err, interact.ErrNotFound) {
		b.log.Warn("gemini api: an interaction no turn continues could not be deleted; Google drops it after its retention period",
			"interaction", id, "err", b.maskKey(err.Error()))
	}
}
