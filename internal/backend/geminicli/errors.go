package geminicli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// The constructors, one per kind. Each reason says what happened and, where
// the user can act, what to do. Those only this package uses are not
// exported.

// NotFoundError is a CLI that cannot be found or run.
func NotFoundError(reason string, cause error) *backend.Error {
	return &backend.Error{Kind: backend.KindNotFound, Reason: reason, Err: cause}
}

// StartError is a CLI process that could not be started.
func StartError(reason string, cause error) *backend.Error {
	return &backend.Error{Kind: backend.KindStart, Reason: reason, Err: cause}
}

// CancelledError is a call its caller cancelled (cause is the context's
// error), or a CLI that exited 130 (cause nil).
func CancelledError(reason string, cause error) *backend.Error {
	return &backend.Error{Kind: backend.KindCancelled, Reason: reason, Err: cause}
}

// TimeoutError is a call stopped at the server's per-call limit.
func TimeoutError(reason string) *backend.Error {
	return &backend.Error{Kind: backend.KindTimeout, Reason: reason, Err: context.DeadlineExceeded}
}

// CallTimeoutError is a chat call stopped at --timeout.
func CallTimeoutError(limit time.Duration) *backend.Error {
	return TimeoutError(fmt.Sprintf("gemini timed out after %s (the per-call limit, --timeout) and was stopped. "+
		"Raise --timeout (GEMINI_MCP_TIMEOUT) if such calls need longer", seconds(limit)))
}

// errOutputLimit is the cause of an OutputTooBigError.
var errOutputLimit = errors.New("output limit")

// OutputTooBigError is an answer past --max-output-bytes.
func OutputTooBigError(limit int) *backend.Error {
	return &backend.Error{Kind: backend.KindOutputTooBig, Err: errOutputLimit, Reason: fmt.Sprintf("gemini's output passed the %d-byte limit and the call was stopped. "+
		"Ask for a shorter answer, or raise --max-output-bytes (GEMINI_MCP_MAX_OUTPUT_BYTES)", limit)}
}

// EmptyError is an answer without text.
func EmptyError() *backend.Error {
	return &backend.Error{Kind: backend.KindEmpty, Reason: "gemini returned an empty answer (the model produced no text; " +
		"its loop detector also blanks answers that repeat themselves). Try again, or rephrase the prompt"}
}

// BadOutputError is a CLI that exited 0 without the expected output.
func BadOutputError(reason string) *backend.Error {
	return &backend.Error{Kind: backend.KindBadOutput, Reason: reason}
}

// FailedError is any other failure; cause may be nil.
func FailedError(reason string, cause error) *backend.Error {
	return &backend.Error{Kind: backend.KindFailed, Reason: reason, Err: cause}
}

// KilledError is a CLI killed by a signal this server did not send.
func KilledError(sig string) *backend.Error {
	e := FailedError(killedBy(sig), nil)
	e.Signal = sig
	return e
}

// killedBy explains a CLI killed by signal sig. The server's own stops
// (cancel, timeout, output cap) are reported as such before this is asked.
func killedBy(sig string) string {
	return "gemini was killed by signal " + sig + ", sent by something other than this server " +
		"(SIGKILL often comes from the system's out-of-memory killer: see the system log and free memory). Try again"
}

// AuthError is a CLI without usable credentials; msg is what it said, and
// note how it said it ("(exit 41)"), if anything.
func AuthError(msg, note string) *backend.Error {
	return &backend.Error{Kind: backend.KindAuth, Reason: withMessage(join("authentication failed", note), msg) + ". " + AuthHelp}
}

// APIError is an HTTP status from the Gemini API.
func APIError(status int, msg, note string) *backend.Error {
	return &backend.Error{Kind: backend.KindAPI, Status: status,
		Reason: withMessage(join(fmt.Sprintf("Gemini API error %d %s", status, http.StatusText(status)), note), msg) + ". " + statusHelp(status)}
}

func sessionError(resume, dir, msg, note string) *backend.Error {
	return &backend.Error{Kind: backend.KindSession, Reason: withMessage(join(fmt.Sprintf("gemini could not resume session %q in %s", resume, dir), note), msg) +
		". The CLI keeps sessions per working directory: resume a session in the cwd it was started in, or start a new one with chat"}
}

func inputError(msg, note string) *backend.Error {
	return &backend.Error{Kind: backend.KindInput, Reason: withMessage(join("gemini rejected its input", note), msg)}
}

func configError(msg, note string) *backend.Error {
	return &backend.Error{Kind: backend.KindConfig, Reason: withMessage(join("gemini configuration error", note), msg) + ". Check the CLI's settings.json files"}
}

func turnLimitError(msg, note string) *backend.Error {
	return &backend.Error{Kind: backend.KindTurnLimit, Reason: withMessage(join("the session reached its turn limit", note), msg) +
		". The CLI's model.maxSessionTurns setting caps turns per session: start a new session with chat"}
}

func toolError(msg, note string) *backend.Error {
	return &backend.Error{Kind: backend.KindTool, Reason: withMessage(join("a tool failed fatally inside gemini", note), msg)}
}

func untrustedError(dir, msg, note string) *backend.Error {
	return &backend.Error{Kind: backend.KindUntrusted, Reason: withMessage(join(fmt.Sprintf("gemini does not trust the workspace %s", dir), note), msg) +
		". Trust the folder in the Gemini CLI, or let this server skip the check with --skip-trust " +
		"(GEMINI_MCP_SKIP_TRUST=true) or GEMINI_CLI_TRUST_WORKSPACE=true in its environment"}
}

// join puts a note such as "(exit 41)" after s.
func join(s, note string) string {
	if note == "" {
		return s
	}
	return s + " " + note
}

// withMessage adds the CLI's own message after s. The message may end with
// a full stop; the help that follows brings its own.
func withMessage(s, msg string) string {
	msg = strings.TrimRight(msg, ". ")
	if msg == "" {
		return s
	}
	return s + ": " + msg
}

// AuthHelp says what the CLI accepts as credentials since 2026-06-18.
const AuthHelp = "The Gemini CLI needs a paid Gemini API key (GEMINI_API_KEY), " +
	"Vertex AI (GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION), " +
	"or a Gemini Code Assist Standard/Enterprise login (GOOGLE_GENAI_USE_GCA=true), set in the environment this server runs in. " +
	"Free, Google AI Pro and Ultra accounts lost Gemini CLI access on 2026-06-18."

// InstallHelp says how to get the CLI or point the server at it.
const InstallHelp = "Install it with `npm install -g @google/gemini-cli` (Node.js 20 or newer), " +
	"or point this server at it with --gemini PATH or GEMINI_MCP_GEMINI=PATH."

// Classify turns the CLI's own exit into an Error: a non-zero exit code, or
// exit 0 with an error object in its output. out is the CLI's JSON error
// object if one was found; resume is the session reference of the call, if
// it resumed one; dir is its working directory.
func Classify(exit int, out *Output, stderr string, resume string, dir string) *backend.Error {
	msg, status := FailureMessage(out, stderr)
	// The CLI exits with its error's code modulo 256: an API failure's HTTP
	// status (400 gives 144, 429 gives 173, 500 gives 244), but any other
	// number an error carries too. Without the status in its output, an
	// exit code stands for a status only when it is one the Gemini API
	// answers with; 255, say, is not taken for 511.
	if status == 0 && exit >= 144 && exit <= 255 && APIStatuses[exit+256] {
		status = exit + 256
	}
	note := fmt.Sprintf("(exit %d)", exit)
	var e *backend.Error
	switch {
	case exit == 41:
		e = AuthError(msg, note)
	case exit == 42 && resume != "":
		e = sessionError(resume, dir, msg, note)
	case exit == 42:
		e = inputError(msg, note)
	case exit == 52:
		e = configError(msg, note)
	case exit == 53:
		e = turnLimitError(msg, note)
	case exit == 54:
		e = toolError(msg, note)
	case exit == 55:
		e = untrustedError(dir, msg, note)
	case exit == 130:
		e = CancelledError(withMessage("gemini was cancelled "+note, msg), nil)
	case status != 0:
		e = APIError(status, msg, note)
	case exit == 0:
		e = FailedError(withMessage("gemini reported an error "+note, msg), nil)
	case exit == 1:
		// The CLI's own exit for a bad flag, a crash, a missing system
		// prompt file or a sandbox failure: its message tells which.
		e = FailedError(withMessage("gemini exited with code 1", msg), nil)
	default:
		e = FailedError(withMessage(fmt.Sprintf("gemini exited with code %d, "+
			"which is neither one of the Gemini CLI's exit codes nor an HTTP status of the Gemini API modulo 256", exit), msg)+
			". See the CLI's stderr below", nil)
	}
	return e.SetRan(stderr).SetExited(exit)
}

// FailureMessage finds the CLI's description of a failure and the API's
// HTTP status in it, if any.
func FailureMessage(out *Output, stderr string) (msg string, status int) {
	msg = cliMessage(out, stderr)
	if out != nil && out.Error != nil {
		if c, ok := out.Error.CodeInt(); ok && IsHTTPStatus(c) {
			status = c
		}
		if text, _, code := splitAPIMessage(out.Error.Message); code != 0 || text != out.Error.Message {
			msg = text
			if status == 0 && IsHTTPStatus(code) {
				status = code
			}
		}
	}
	return msg, status
}

// APIStatuses are the HTTP statuses the Gemini API answers failures with
// (those of google.rpc's codes it uses, and the 502 of a proxy on the way):
// the only ones an exit code alone is taken for.
var APIStatuses = map[int]bool{400: true, 401: true, 403: true, 404: true, 408: true, 409: true, 413: true,
	429: true, 499: true, 500: true, 501: true, 502: true, 503: true, 504: true}

// IsHTTPStatus says whether the code of an error the CLI reported is an
// HTTP error status: 400 to 599 and named; other numbers an error carries
// (255, -1) are not.
func IsHTTPStatus(code int) bool {
	return code >= 400 && code <= 599 && http.StatusText(code) != ""
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
			return msg.Clip(t, 500)
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		t := strings.TrimSpace(lines[i])
		if t == "" || strings.HasPrefix(t, "at ") || t == "}" || t == "{" {
			continue
		}
		return msg.Clip(t, 500)
	}
	return ""
}

// seconds formats a duration for messages: "300 s", or "1.5 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}
