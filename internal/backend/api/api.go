// Package api is the backend that talks to the Gemini API itself, through
// Google's Go SDK (google.golang.org/genai), with no Gemini CLI and no
// process of any kind: every call is an HTTPS request from this server.
//
// The API remembers nothing between calls, so the backend keeps each
// conversation's turns in a [History] (the session store) and sends the
// whole conversation with every turn (a turn run as a model interaction
// of the Interactions API may instead continue the one Google stored:
// modelinteraction.go). A turn is recorded only once its
// answer is complete, or cut at the model's output limit (for a next turn
// to continue, finish.go): a failed or cancelled call, or an answer whose
// stream ended without a finish reason, leaves the conversation as it was.
//
// A turn keeps every part of each answer as it came, thought signatures
// included, which Gemini 3 wants back (stream.go); media files go inline
// or through the Files API, whose uploads belong to their session and go
// with it (media.go, resources.go); a conversation's large file context
// goes in an explicit context cache, which goes with its session too
// (cache.go).
//
// Everything the API sends is bounded (see guard.go): each event of a
// streamed answer, the bytes of all a turn's answers, the parts and
// function calls of each, and the time of the whole call (Options.Timeout).
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/apicreds"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/queue"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Defaults of Options.
const (
	DefaultRetries      = 3
	DefaultRetryBackoff = time.Second
	DefaultModelsTTL    = 10 * time.Minute
	// maxBackoff bounds the wait before one retry when the API names no
	// delay.
	maxBackoff = 30 * time.Second
	// maxRetryWait is the longest delay the API may ask for that is waited
	// out; a longer one (a daily quota) ends the call with the delay in
	// its error.
	maxRetryWait = time.Minute
)

// Options configure a Backend.
type Options struct {
	// Model is the default model; "" means DefaultModel.
	Model string
	// FallbackModel, when set, answers a turn whose model's quota is
	// exhausted (fallback.go); an alias such as "flash" is resolved as a
	// turn's model is.
	FallbackModel string
	// Timeout bounds each call, retries included; 0 leaves it to the
	// caller's context.
	Timeout time.Duration
	// MaxOutputBytes caps the bytes streamed from the API for one turn,
	// every part of every round's answer as it arrives; 0 means
	// config.DefaultMaxOutputBytes.
	MaxOutputBytes int
	// Getenv reads the credentials (see Credentials); nil means os.Getenv.
	Getenv func(string) string
	// BaseURL overrides the API's endpoint (also GOOGLE_GEMINI_BASE_URL,
	// or GOOGLE_VERTEX_BASE_URL for Vertex AI), for proxies and tests.
	BaseURL string
	// Retries is how often a 429 or 5xx answer is retried; 0 means
	// DefaultRetries, a negative number none.
	Retries int
	// RetryBackoff is the wait before the first retry when the API names
	// no delay, doubled for each next one; 0 means DefaultRetryBackoff.
	RetryBackoff time.Duration
	// ModelsTTL is how long the model list is trusted; 0 means
	// DefaultModelsTTL.
	ModelsTTL time.Duration
	// Tools are the tools of other MCP servers Gemini may call; nil for
	// none.
	Tools backend.ToolHost
	// MaxToolRounds bounds the rounds of tool calls in one turn; 0 means
	// config.DefaultMaxToolRounds.
	MaxToolRounds int
	// AllowTools are the operator's allow-list of untrusted tools that run
	// without asking the user: "server" for all of a server's tools,
	// "server.tool" for one.
	AllowTools []string
	// MaxInlineBytes bounds a request with media sent inline; media that
	// do not fit go through the Files API. 0 means
	// config.DefaultMaxInlineBytes, a negative number uploads them all.
	MaxInlineBytes int
	// CacheTTL is how long a context cache is kept after its last use
	// (cache.go); 0 means config.DefaultCacheTTL, a negative number
	// makes none.
	CacheTTL time.Duration
	// ServerHistory continues plain text conversations on the
	// Interactions API by their stored interaction rather than resending
	// them (modelinteraction.go).
	ServerHistory bool
	// InteractionPoll is the time between polls of a background model
	// interaction; 0 means defaultInteractionPoll.
	InteractionPoll time.Duration
}

// Backend runs turns on the Gemini API. It is safe for concurrent use.
type Backend struct {
	client    *genai.Client
	transport *http.Transport // nil when the SDK made its own
	creds     apicreds.Creds
	hist      History
	log       *slog.Logger
	model     string // Options.Model; "" for DefaultModel
	timeout   time.Duration
	maxOut    int
	retries   int
	backoff   time.Duration
	models    *models

	tools      backend.ToolHost // nil: no tools
	maxRounds  int
	allowTools []string

	sessions queue.Locks // one turn at a time per conversation; a lock exists while held or awaited

	maxInline int           // bytes of a request with media inline
	cacheTTL  time.Duration // of a context cache; 0 for none
	res       resources     // what the API keeps for the sessions (uploaded files, caches)

	serverHistory   bool          // Options.ServerHistory
	interactionPoll time.Duration // of a background model interaction

	fallbackModel string    // Options.FallbackModel; "" for none
	lastKnown     sync.Once // logs that the default is lastKnownFlash
}

// New returns a Backend using the credentials found through
// opts.Getenv, keeping conversations in hist. It makes no request; see
// Check. Its error, when there are no credentials, is a *backend.Error of
// KindAuth that says what to set.
func New(opts Options, hist History, log *slog.Logger) (*Backend, error) {
	if hist == nil {
		return nil, errors.New("api backend: no history store")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := apicreds.Read(opts.Getenv)
	if !c.OK {
		return nil, newError(backend.KindAuth, nil, "no credentials for the Gemini API: %s. %s", c.What, CredentialsHelp)
	}
	cc := clientConfig(c, opts.BaseURL)
	var transport *http.Transport
	if c.Key != "" {
		// With a key, the SDK only adds a header: our own transport lets
		// Close drop its idle connections. Vertex AI with Application
		// Default Credentials keeps the SDK's, which signs the requests.
		transport = http.DefaultTransport.(*http.Transport).Clone()
		transport.MaxResponseHeaderBytes = maxHeaderBytes
		cc.HTTPClient = &http.Client{Transport: transport}
	}
	client, err := genai.NewClient(context.Background(), cc)
	if err != nil {
		return nil, newError(backend.KindAuth, err, "the Gemini API client could not be set up with %s: %v. %s",
			c.What, err, CredentialsHelp)
	}
	// The client's HTTP client is shared with the SDK (for Vertex AI with
	// Application Default Credentials, it is the SDK's own, which signs
	// the requests): every answer then passes the guard.
	guardClient(client.ClientConfig().HTTPClient)
	b := &Backend{
		client:    client,
		transport: transport,
		creds:     c,
		hist:      hist,
		log:       log,
		model:     shortName(opts.Model),
		timeout:   opts.Timeout,
		maxOut:    opts.MaxOutputBytes,
		retries:   opts.Retries,
		backoff:   opts.RetryBackoff,

		tools:      opts.Tools,
		maxRounds:  opts.MaxToolRounds,
		allowTools: opts.AllowTools,
	}
	if b.maxOut <= 0 {
		b.maxOut = config.DefaultMaxOutputBytes
	}
	if b.maxRounds <= 0 {
		b.maxRounds = config.DefaultMaxToolRounds
	}
	switch b.maxInline = opts.MaxInlineBytes; {
	case b.maxInline == 0:
		b.maxInline = config.DefaultMaxInlineBytes
	case b.maxInline < 0:
		b.maxInline = 0
	}
	switch b.cacheTTL = opts.CacheTTL; {
	case b.cacheTTL == 0:
		b.cacheTTL = config.DefaultCacheTTL
	case b.cacheTTL < 0:
		b.cacheTTL = 0
	}
	b.fallbackModel = shortName(opts.FallbackModel)
	b.serverHistory, b.interactionPoll = opts.ServerHistory, opts.InteractionPoll
	if b.interactionPoll <= 0 {
		b.interactionPoll = defaultInteractionPoll
	}
	if b.retries == 0 {
		b.retries = DefaultRetries
	}
	if b.retries < 0 {
		b.retries = 0
	}
	if b.backoff <= 0 {
		b.backoff = DefaultRetryBackoff
	}
	ttl := opts.ModelsTTL
	if ttl <= 0 {
		ttl = DefaultModelsTTL
	}
	b.models = &models{ttl: ttl, list: b.listModels}
	return b, nil
}

// Provider names the service the backend calls, as the GenAI semantic
// conventions' gen_ai.provider.name does: gcp.vertex_ai or gcp.gemini.
func (b *Backend) Provider() string {
	if b.creds.Vertex {
		return "gcp.vertex_ai"
	}
	return "gcp.gemini"
}

// Name is "api".
func (b *Backend) Name() string { return string(config.BackendAPI) }

// Family is the API backend's: it keeps its own history.
func (b *Backend) Family() config.Family { return config.FamilyAPI }

// Close deletes what the API keeps for this process's sessions (uploaded
// files, context caches), then closes the idle connections to the API. The backend keeps
// no process and no goroutine of its own between calls (a sweep for the
// resources of ended sessions runs during one, and Close waits for it).
func (b *Backend) Close() {
	b.res.close(b.resourceError)
	if b.transport != nil {
		b.transport.CloseIdleConnections()
	}
}

// Credentials returns what Credentials said when the Backend was made.
func (b *Backend) Credentials() string { return b.creds.What }

// Run runs one turn: it checks the model, loads the conversation, refuses
// one that no longer fits the model's input, streams the answer (retrying
// a busy or failing API) and records the turn.
func (b *Backend) Run(ctx context.Context, t backend.Turn) (*backend.Answer, error) {
	parent := ctx
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	obs := t.Observer
	if obs == nil {
		obs = nopObserver{}
	}

	id, fresh := strings.ToLower(t.Session), t.Session == ""
	if fresh {
		id = session.NewUUID()
	} else if !session.IsUUID(id) {
		return nil, newError(backend.KindSession, nil, "the API backend continues a conversation by the "+
			"session id chat returned (a UUID), not %q; \"latest\" and indexes are for the Gemini CLI backends", t.Session)
	}
	// One turn at a time per conversation in this process, so that two
	// concurrent replies do not both build on the same history.
	unlock, err := b.sessions.Lock(ctx, id, nil)
	if err != nil {
		return nil, contextError(parent, b.timeout)
	}
	defer unlock()

	b.res.maybeSweep(b.alive, b.resourceError)
	// A conversation goes on with the model of its last turn (h.model)
	// unless the turn names another: the default model may differ, and its
	// requests would carry another model's thought signatures.
	var h history
	if !fresh {
		if h, err = b.loadHistory(ctx, id); err != nil {
			return nil, err
		}
	}
	contents, refs, ctxParts, sessionModel := h.contents, h.refs, h.ctxParts, h.model // ctxParts: of contents[0], its stable context
	user, userCtx := userContent(t)
	if fresh {
		ctxParts = userCtx
	}
	contents = append(contents, user)

	model := shortName(t.Model)
	if model == "" {
		model = sessionModel
	}
	if t.Image != nil {
		model, err = b.imageModel(parent, ctx, model)
	} else {
		if model == "" {
			model = b.model
		}
		model, err = b.resolveModel(parent, ctx, model)
	}
	if err != nil {
		return nil, err
	}
	mi, found, known, err := b.models.lookup(ctx, model)
	if err != nil {
		be := b.classify(parent, ctx, err, model)
		if be.Kind != backend.KindFailed && be.Kind != backend.KindAPI {
			return nil, be
		}
		b.log.Warn("gemini api: the model list could not be had; the model name goes unchecked", "err", be.Reason)
	}
	if known && !found {
		return nil, b.unknownModel(model)
	}
	quotaNote := ""
	if background, use := b.interactionTurn(t, mi, known); use {
		ans, err := b.runInteraction(parent, ctx, interactionCall{id: id, fresh: fresh, t: t, model: model, background: background,
			user: user, userCtx: userCtx, earlier: h.contents, prev: h.interaction, prevModel: h.model, obs: obs})
		if quotaNote = b.quotaOnInteraction(background, model, err); quotaNote == "" {
			return ans, err
		}
	}
	if known && !mi.generates {
		return nil, newError(backend.KindInput, nil, "model %q does not generate content (it is not a chat model); "+
			"leave model out for the default (%s)", model, b.defaultName())
	}

	cfg := &genai.GenerateContentConfig{
		// The SDK would otherwise resend a truncated answer's request with
		// a continuation token, each billed, beyond our timeout's view.
		AutomaticContinuation: genai.Ptr(false),
	}
	if t.SystemPrompt != "" {
		cfg.SystemInstruction = genai.NewContentFromText(t.SystemPrompt, genai.RoleUser)
	}
	if t.Temperature != nil {
		cfg.Temperature = genai.Ptr(float32(*t.Temperature))
	}
	if len(t.ResponseSchema) > 0 {
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseJsonSchema = t.ResponseSchema
	}
	if t.Image != nil {
		imageConfig(t.Image, cfg)
	}
	notApplied, err := thinking(t, model, mi, known, cfg)
	if err != nil {
		return nil, err
	}
	if quotaNote != "" {
		notApplied = append(notApplied, quotaNote)
	}

	if len(refs) > 0 {
		if err := b.refreshFiles(ctx, id, contents, refs); err != nil {
			return nil, err
		}
	}
	var media []mediaRef
	if len(t.Media) > 0 {
		parts, uploaded, err := b.mediaParts(ctx, id, contents, cfg.SystemInstruction, t.Media)
		if err != nil {
			return nil, err
		}
		user.Parts, media = append(user.Parts, parts...), uploaded
	}

	if known && mi.inputLimit > 0 {
		if err := b.checkFits(parent, ctx, model, mi.inputLimit, cfg.SystemInstruction, contents); err != nil {
			return nil, err
		}
	}

	obs.Started()
	res, exchange, notes, err := b.converseCached(parent, ctx, id, t, model, contents, ctxParts, cfg, obs)
	fellBack := ""
	if err != nil && b.fallbackModel != "" && t.Image == nil && isExhausted(err) {
		// The asked model's quota will not reset within the call: the
		// turn goes once to the fallback model, which the session then
		// records as its model.
		var fb string
		if res, exchange, notes, fb, err = b.fallback(parent, ctx, id, t, model, err, contents, ctxParts, cfg, obs); err == nil {
			fellBack, model, notApplied = model, fb, withoutThinkingNotes(notApplied)
		}
	}
	if err != nil {
		return nil, builtinError(unmarkExhausted(err), t.Builtins, model)
	}

	if t.Image != nil {
		if e := imageFinishError(res.finish, res.text); e != nil {
			return nil, e
		}
		if len(res.images) == 0 {
			notApplied = append(notApplied, noImageNote)
		}
	}
	answered := model
	if res.modelVersion != "" {
		answered = res.modelVersion
	}
	ans := &backend.Answer{SessionID: id, Text: res.text, Usage: res.usage, NotApplied: append(notApplied, notes...), Model: answered, Via: "api",
		Grounding: res.meta.grounding, URLs: res.meta.urls, FallbackFrom: fellBack,
		Thoughts: res.thoughts, CodeRuns: res.runs, Images: res.images}
	if res.meta.dropped {
		ans.NotApplied = append(ans.NotApplied, fmt.Sprintf("google_search: the search suggestions' HTML was over %d bytes, "+
			"this server's cap, and was left out of _meta.grounding", maxRenderedBytes))
	}
	if note, keep := incompleteNote(res, fresh, id); note != "" {
		// What came is given and said to be cut. An answer cut at the
		// model's output limit is the start of a whole one: it is kept,
		// for a next turn to continue. Any other may be any part of the
		// answer: it is kept out of the conversation, which a next turn
		// continues from the last whole one.
		ans.Incomplete, ans.IncompleteKept, ans.FinishReason = note, keep, string(res.finish)
		if !keep {
			if fresh {
				ans.SessionID = ""
			}
			b.log.Warn("gemini api: the answer may be cut short; not recorded", "session", id, "finishReason", res.finish)
			return ans, nil
		}
		b.log.Info("gemini api: the answer was cut at the model's output limit; recorded for a next turn to continue",
			"session", id, "finishReason", res.finish)
	}
	rec, err := json.Marshal(turnRecord{
		User:         user,
		ContextParts: userCtx,
		Exchange:     exchange,
		Model:        &genai.Content{Role: genai.RoleModel, Parts: res.parts},
		Media:        media,
		ModelName:    model,
		ModelVersion: res.modelVersion,
		Time:         time.Now().UTC(),
		Usage:        res.usage,
	})
	if err == nil {
		err = b.hist.AppendTurn(context.WithoutCancel(parent), id, rec)
	}
	if err != nil {
		b.log.Error("gemini api: the turn could not be recorded", "session", id, "err", err)
		ans.Unsaved = err
		if fresh {
			ans.SessionID = ""
		}
	}
	return ans, nil
}
