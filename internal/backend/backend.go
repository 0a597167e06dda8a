// Package backend is what the tools see of Gemini: a turn in, an answer or
// a typed error out, with progress and cancellation. The tools know nothing
// of which backend runs. The implementations live beside this package, one
// package each: the Gemini CLI one process per call, the Gemini CLI as a
// warm pool of `gemini --acp` processes, and the Gemini API itself.
package backend

import (
	"context"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// Turn is one prompt to Gemini.
type Turn struct {
	Prompt string
	// ContextLen is the length of the stable context at the start of
	// Prompt (the files the expert tools and chat's files send), 0 for
	// none. The API backend sends it as a part of its own, which it may
	// keep in an explicit cache for the conversation's later turns.
	ContextLen int
	// Owner names the caller the turn comes from (identity.Who's
	// Caller): a context cache is only used for turns of the same owner.
	Owner        string
	Model        string // "" for the backend's default
	SystemPrompt string // "" for the backend's own
	// Dir is the absolute working directory, already checked against the
	// operator's allowed roots. The CLI backends run there; sessions belong
	// to it.
	Dir string
	// Session is "" to start a new session, else the session to continue:
	// a UUID, or (CLI backends only) "latest" or an index.
	Session string
	// Temperature and ThinkingMode tune the call where the backend can;
	// one that cannot says so in Answer.NotApplied rather than failing.
	Temperature  *float64 // nil for the model's default
	ThinkingMode string   // "", or off, minimal, low, medium, high, max
	// IncludeThoughts asks for the model's thought summaries, returned
	// apart from the answer (Answer.Thoughts) and never recorded as it.
	IncludeThoughts bool
	Observer        Observer // may be nil
	// Confirm asks the user before an untrusted downstream tool runs (API
	// backend with a ToolHost only); nil when the client cannot be asked.
	Confirm Confirm
	// Builtins asks for the Gemini API's own tools and structured output
	// (API backend only; the CLI backends refuse a turn that sets any).
	Builtins
	// Media are files Gemini reads itself (images, PDFs, audio, video),
	// sent with the prompt; only the API backend takes them.
	Media []Media
}

// Media is a file Gemini reads itself: an image, a PDF, audio or video.
type Media struct {
	// Path names it for Gemini and in errors: the path relative to the
	// project root, slash-separated.
	Path string
	// Abs is the file that was read, to read it again when the copy the
	// API keeps is gone (its content must then still have SHA256).
	Abs      string
	MIMEType string
	Data     []byte
	SHA256   string // hex, of Data
}

// Observer hears what a turn is doing, for progress reports. Its methods
// are called from the goroutine running the turn, or from one the backend
// runs for it; they must not block.
type Observer interface {
	// Queued says the turn waits for a free slot, with ahead turns before
	// it; it is called again as the line moves.
	Queued(ahead int)
	// Started says Gemini is working on the turn.
	Started()
	// Activity says what Gemini is doing now ("writing the answer",
	// "reading a file"), in a few words.
	Activity(msg string)
}

// TextObserver is an Observer that also hears the answer's text as it
// arrives: a background job shows it as its output so far. A backend
// that streams the answer (the API backend, the warm backend's message
// chunks) type-asserts the turn's Observer to it; one that gets the
// answer whole at its end (the one-shot CLI, --output-format json) never
// calls it. Like Observer's methods, AnswerSoFar must not block.
type TextObserver interface {
	// AnswerSoFar is the answer's text received so far: the whole of
	// it, not what was added since the last call. A backend that starts
	// the answer over (a retried stream, the next round of tool calls)
	// reports the new one from its start.
	AnswerSoFar(text string)
}

// AnswerSoFar tells obs the answer's text so far, if obs hears it.
func AnswerSoFar(obs Observer, text string) {
	if to, ok := obs.(TextObserver); ok {
		to.AnswerSoFar(text)
	}
}

// Usage is what a turn cost in tokens; a count the backend does not report
// is 0.
type Usage struct {
	PromptTokens   int `json:"promptTokens,omitempty"`
	OutputTokens   int `json:"outputTokens,omitempty"`
	ThinkingTokens int `json:"thinkingTokens,omitempty"`
	// CachedTokens are the part of PromptTokens the API read from a
	// context cache (explicit, or its implicit caching), billed at its
	// lower rate.
	CachedTokens int `json:"cachedTokens,omitempty"`
	// ToolUsePromptTokens are the tokens of what the API's own tools
	// (Google Search, URL context) fed the model, billed as input on top
	// of PromptTokens.
	ToolUsePromptTokens int `json:"toolUsePromptTokens,omitempty"`
	// TotalTokens is the API's own total: prompt, output, tool use and
	// thinking tokens.
	TotalTokens int `json:"totalTokens,omitempty"`
}

// Add adds o's counts to u's.
func (u *Usage) Add(o *Usage) {
	u.PromptTokens += o.PromptTokens
	u.OutputTokens += o.OutputTokens
	u.ThinkingTokens += o.ThinkingTokens
	u.CachedTokens += o.CachedTokens
	u.ToolUsePromptTokens += o.ToolUsePromptTokens
	u.TotalTokens += o.TotalTokens
}

// Answer is a successful turn.
type Answer struct {
	SessionID string // the session the turn belongs to; "" only when no way of learning it worked
	Text      string
	Usage     *Usage // nil when the backend reports none
	// NotApplied names the Turn's tuning the backend could not apply, each
	// with the reason, e.g. "temperature: the Gemini CLI takes no
	// per-call temperature".
	NotApplied []string
	// Model is the model that answered, when the backend knows it (the
	// API backend: the modelVersion the API reports, else the model asked
	// for, a short alias such as "pro" resolved to a model name); ""
	// otherwise.
	Model string
	// FallbackFrom is the model the turn asked for when its quota was
	// exhausted and Model, the fallback model (the API backend's
	// --fallback-model), answered instead; "" otherwise.
	FallbackFrom string
	// Interaction is the id of the Interactions API interaction that
	// answered, when Google keeps it for a next turn to continue (the API
	// backend's --api-server-history); "" otherwise.
	Interaction string
	// Via says, for logs, how the answer came: "warm", "json",
	// "preselected", "api"…
	Via string
	// Unsaved, when set, is why the backend could not keep the turn it
	// answered (the API backend's history, in the session store): the
	// answer stands, but a new session (SessionID "") cannot be
	// continued, and a continued one goes on without this turn.
	Unsaved error
	// Incomplete is "" for a whole answer. Otherwise the answer is what
	// arrived of one that was cut short, and Incomplete says so and why,
	// in sentences for the caller; such a turn is not recorded in its
	// session (SessionID is then "" for a new conversation), unless
	// IncompleteKept.
	Incomplete string
	// IncompleteKept says that an Incomplete answer was recorded all the
	// same as its session's last turn, so that a chat-reply can ask Gemini
	// to go on from where it stopped (an answer cut at the model's output
	// limit).
	IncompleteKept bool
	// FinishReason is why the model stopped, when the backend knows it
	// and it is not a natural stop (the API's MAX_TOKENS, OTHER…); "" for
	// a whole answer.
	FinishReason string
	// Grounding is what Google Search gave the answer (Turn.GoogleSearch),
	// nil when the turn did not ask for it or the API reported none.
	Grounding *Grounding
	// URLs are the retrieval status of each URL the API read for the
	// answer (Turn.URLs), in the API's order.
	URLs []URLStatus
	// Thoughts are the model's thought summaries (Turn.IncludeThoughts),
	// apart from Text, which they are never part of; "" for none.
	Thoughts string
	// CodeRuns are the code the model ran in the API's sandbox
	// (Turn.CodeExecution) and what came of it, in order; Text shows
	// them too, in their place among the prose.
	CodeRuns []CodeRun
	// Images are the images the model made (its code's output, or an
	// image model's pictures for Turn.Image), in order.
	Images []Image
}

// Backend runs turns. It is safe for concurrent use. Run's error is always
// an *Error; a cancelled turn's matches context.Canceled, a timed-out one's
// context.DeadlineExceeded.
type Backend interface {
	// Name is the backend's name as --backend spells it.
	Name() string
	// Family is the family of the sessions it starts and can continue.
	Family() config.Family
	Run(ctx context.Context, t Turn) (*Answer, error)
	// Close stops what the backend keeps running and waits for it.
	Close()
}

// Preparer is a backend that can get ready for a client's first chat
// before it comes (the warm backend starts a process). Prepare returns at
// once; the work goes on in the background, and Close waits for it.
type Preparer interface {
	Prepare(dir string)
}

// Prepare tells b, or the backend b wraps, to get ready for a new chat in
// dir, if it can.
func Prepare(b Backend, dir string) {
	for b != nil {
		if p, ok := b.(Preparer); ok {
			p.Prepare(dir)
			return
		}
		u, ok := b.(interface{ Unwrap() Backend })
		if !ok {
			return
		}
		b = u.Unwrap()
	}
}

// TokenCounter is a backend that can count the tokens of a text as its
// default model reads them (the API backend, through countTokens). The
// file context counts with it where it can, and estimates otherwise.
type TokenCounter interface {
	CountTokens(ctx context.Context, text string) (int, error)
}

// DefaultKillGrace is how long a stopped Gemini CLI gets, from the
// interrupt, to end by itself before it is killed; every CLI backend uses
// it unless the server sets another.
const DefaultKillGrace = 1500 * time.Millisecond
