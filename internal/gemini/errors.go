package gemini

import (
	"fmt"
	"net/http"
	"strings"
)

// Kind classifies a failed call, so that callers (and tests) can tell them
// apart without matching on message text.
type Kind string

// The kinds of failure a call can end in.
const (
	KindNotFound     Kind = "not-found"      // the gemini executable could not be found
	KindStart        Kind = "start"          // the process could not be started
	KindAuth         Kind = "auth"           // exit 41
	KindInput        Kind = "input"          // exit 42
	KindSession      Kind = "session"        // exit 42 while resuming a session
	KindConfig       Kind = "config"         // exit 52
	KindTurnLimit    Kind = "turn-limit"     // exit 53
	KindTool         Kind = "tool"           // exit 54
	KindUntrusted    Kind = "untrusted"      // exit 55
	KindCancelled    Kind = "cancelled"      // exit 130, or the caller cancelled
	KindTimeout      Kind = "timeout"        // the server's per-call limit ran out
	KindAPI          Kind = "api"            // an HTTP status from the Gemini API
	KindFailed       Kind = "failed"         // any other non-zero exit
	KindBadOutput    Kind = "bad-output"     // exit 0 without the expected JSON
	KindEmpty        Kind = "empty"          // exit 0 with an empty answer
	KindOutputTooBig Kind = "output-too-big" // stdout grew past its cap
)

// Error is a failed gemini call, with what a person needs to act on it.
type Error struct {
	Kind     Kind
	Reason   string // the human explanation, one or a few sentences
	ExitCode int    // the CLI's exit code, or -1 when it did not exit by itself
	Status   int    // the API's HTTP status, for KindAPI
	Stderr   string // a bounded tail of the CLI's stderr
	Ran      bool   // whether a gemini process ran at all
}

func (e *Error) Error() string { return e.Reason }

// AuthHelp says what the CLI accepts as credentials since 2026-06-18.
const AuthHelp = "The Gemini CLI needs a paid Gemini API key (GEMINI_API_KEY), " +
	"Vertex AI (GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION), " +
	"or a Gemini Code Assist Standard/Enterprise login (GOOGLE_GENAI_USE_GCA=true), set in the environment this server runs in. " +
	"Free, Google AI Pro and Ultra accounts lost Gemini CLI access on 2026-06-18."

// InstallHelp says how to get the CLI or point the server at it.
const InstallHelp = "Install it with `npm install -g @google/gemini-cli` (Node.js 20 or newer), " +
	"or point this server at it with --gemini PATH or GEMINI_MCP_GEMINI=PATH."

// classify turns a non-zero exit into an Error. out is the CLI's JSON error
// object if one was found on stderr; resume is the session reference of the
// call, if it resumed one; dir is its working directory.
func classify(exit int, out *Output, stderr string, resume string, dir string) *Error {
	e := &Error{Kind: KindFailed, ExitCode: exit, Stderr: stderr, Ran: true}
	msg := cliMessage(out, stderr)
	status := 0
	if out != nil && out.Error != nil {
		if c, ok := out.Error.CodeInt(); ok && c >= 100 && c <= 599 {
			status = c
		}
		if text, _, code := splitAPIMessage(out.Error.Message); code != 0 || text != out.Error.Message {
			msg = text
			if status == 0 && code >= 100 && code <= 599 {
				status = code
			}
		}
	}
	// The CLI exits with an API status modulo 256 (400 gives 144, 429 gives
	// 173, 500 gives 244); no CLI-defined exit code falls in that range but 130.
	if status == 0 && exit >= 144 && exit <= 255 {
		status = exit + 256
	}
	// The CLI's message may end with a full stop; the help that follows
	// brings its own.
	msg = strings.TrimRight(msg, ". ")
	with := func(s string) string {
		if msg == "" {
			return s
		}
		return s + ": " + msg
	}
	switch {
	case exit == 41:
		e.Kind = KindAuth
		e.Reason = with("authentication failed (exit 41)") + ". " + AuthHelp
	case exit == 42 && resume != "":
		e.Kind = KindSession
		e.Reason = with(fmt.Sprintf("gemini could not resume session %q in %s (exit 42)", resume, dir)) +
			". The CLI keeps sessions per working directory: resume a session in the cwd it was started in, or start a new one with chat"
	case exit == 42:
		e.Kind = KindInput
		e.Reason = with("gemini rejected its input (exit 42)")
	case exit == 52:
		e.Kind = KindConfig
		e.Reason = with("gemini configuration error (exit 52)") + ". Check the CLI's settings.json files"
	case exit == 53:
		e.Kind = KindTurnLimit
		e.Reason = with("the session reached its turn limit (exit 53)") +
			". The CLI's model.maxSessionTurns setting caps turns per session: start a new session with chat"
	case exit == 54:
		e.Kind = KindTool
		e.Reason = with("a tool failed fatally inside gemini (exit 54)")
	case exit == 55:
		e.Kind = KindUntrusted
		e.Reason = with(fmt.Sprintf("gemini does not trust the workspace %s (exit 55)", dir)) +
			". Trust the folder in the Gemini CLI, or let this server skip the check with --skip-trust " +
			"(GEMINI_MCP_SKIP_TRUST=true) or GEMINI_CLI_TRUST_WORKSPACE=true in its environment"
	case exit == 130:
		e.Kind = KindCancelled
		e.Reason = with("gemini was cancelled (exit 130)")
	case status != 0:
		e.Kind = KindAPI
		e.Status = status
		e.Reason = with(fmt.Sprintf("Gemini API error %d %s (exit %d)", status, http.StatusText(status), exit)) + ". " + statusHelp(status)
	default:
		e.Reason = with(fmt.Sprintf("gemini exited with code %d", exit))
	}
	return e
}

// statusHelp says what to do about an API status.
func statusHelp(status int) string {
	switch {
	case status == 429:
		return "The quota or rate limit is exhausted (the CLI already retried with backoff): wait, or check the project's quota and billing"
	case status == 401 || status == 403:
		return "The credentials were refused: check the API key or account and its access to the model. " + AuthHelp
	case status == 404:
		return "The model or endpoint was not found: check the model name"
	case status == 400:
		return "The request was rejected: check the model name, prompt and system prompt"
	case status >= 500:
		return "The Gemini API failed (the CLI already retried with backoff): try again later"
	}
	return "See the CLI's stderr below"
}

// cliMessage finds the CLI's own description of a failure: its JSON error
// message when there is one, else the most telling line of stderr.
func cliMessage(out *Output, stderr string) string {
	if out != nil && out.Error != nil && strings.TrimSpace(out.Error.Message) != "" {
		return strings.TrimSpace(out.Error.Message)
	}
	lines := strings.Split(stderr, "\n")
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "Error") || strings.HasPrefix(t, "Unknown argument") ||
			strings.HasPrefix(t, "No input provided") || strings.HasPrefix(t, "Please set an Auth method") {
			return clip(t, 500)
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		t := strings.TrimSpace(lines[i])
		if t == "" || strings.HasPrefix(t, "at ") || t == "}" || t == "{" {
			continue
		}
		return clip(t, 500)
	}
	return ""
}
