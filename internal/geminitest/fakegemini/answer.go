package main

import (
	"fmt"
	"os"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// answer does what the real CLI does once it has a prompt: it opens or starts the session,
// misbehaves as the prompt's directives say, saves the turn and prints the answer.
func answer(opts *options, req *request, inv invocation) error {
	st, err := openStore(inv.Cwd)
	if err != nil {
		return err
	}
	sess, err := st.session(opts, req.prompt)
	if err != nil {
		return err
	}
	d := req.directives
	model := modelFor(opts)
	if d.stderrBytes > 0 {
		writeNoise(os.Stderr, d.stderrBytes)
	}
	time.Sleep(d.sleep)
	if d.signal != 0 {
		killSelf(d.signal)
	}
	if d.child {
		if inv.ChildPid, err = startChild(); err != nil {
			return err
		}
		if err := writeLog(inv); err != nil {
			return err
		}
	}
	if d.blocks() {
		hang()
	}

	out := printer{format: opts.outputFormat, sessionID: sess.ID, model: model}
	if d.noSession {
		out.sessionID = ""
	}
	if os.Getenv(geminitest.EnvNoAPIKey) == "1" {
		d.exitCode = 41
	}
	if d.exitCode != 0 {
		// A failed turn is not saved, so the session is as it was before this run.
		return out.failure(d.exitCode, req.prompt)
	}
	n := len(sess.Turns) + 1
	text := responseFor(d, n, model, req)
	sess.Turns = append(sess.Turns, newTurn(n, req.prompt, model, req.system, text))
	if err := st.save(sess); err != nil {
		return err
	}
	if d.badJSON {
		fmt.Print("this is not json\n")
		return nil
	}
	return out.success(req.prompt, text)
}

// modelFor returns the model a run uses: -m, else GEMINI_MODEL, else the default.
func modelFor(opts *options) string {
	if opts.model != "" {
		return opts.model
	}
	if m := os.Getenv("GEMINI_MODEL"); m != "" {
		return m
	}
	return geminitest.DefaultModel
}

// responseFor returns the response text: the deterministic answer, unless [[stdout:N]] asks for
// N bytes or [[empty]] for none.
func responseFor(d directives, turn int, model string, req *request) string {
	switch {
	case d.empty:
		return ""
	case d.stdoutBytes >= 0:
		return variedText(d.stdoutBytes, "fake-gemini answer line %d\n")
	default:
		return geminitest.Answer(turn, model, req.system, req.prompt)
	}
}

// apiFailure is the error object of the real CLI's JSON output.
type apiFailure struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

// failureFor returns the error the real CLI reports with exit code exit. The codes 144 to 255
// that are the statuses of apiStatuses modulo 256 (400 gives 144) are API errors, their message
// the API's JSON error body as a string; the others, 255 among them, are errors that carry a code
// of their own, as any exit code but the CLI's fatal ones.
func failureFor(exit int) apiFailure {
	switch {
	case exit >= 144 && exit <= 255 && apiStatuses[exit+256] != "":
		status := exit + 256
		body := fmt.Sprintf(`{"error":{"code":%d,"message":"fake api error %d","status":"%s"}}`,
			status, status, apiStatus(status))
		return apiFailure{Type: "Error", Message: body, Code: status}
	case exit == 41:
		return apiFailure{Type: "FatalAuthenticationError", Code: 41,
			Message: "When using Gemini API, you must specify the GEMINI_API_KEY environment variable."}
	case exit == 53:
		return apiFailure{Type: "FatalTurnLimitedError", Code: 53,
			Message: "Reached max session turns for this session. Increase the number of turns by specifying maxSessionTurns in settings.json."}
	case exit == 55:
		return apiFailure{Type: "FatalUntrustedWorkspaceError", Code: 55,
			Message: "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode."}
	default:
		return apiFailure{Type: "FatalError", Message: fmt.Sprintf("fake failure with exit %d", exit), Code: exit}
	}
}

// apiStatuses maps HTTP statuses to the google.rpc status names that the Gemini API pairs with
// them.
var apiStatuses = map[int]string{
	400: "INVALID_ARGUMENT",
	401: "UNAUTHENTICATED",
	403: "PERMISSION_DENIED",
	404: "NOT_FOUND",
	409: "ABORTED",
	429: "RESOURCE_EXHAUSTED",
	499: "CANCELLED",
	500: "INTERNAL",
	501: "NOT_IMPLEMENTED",
	503: "UNAVAILABLE",
	504: "DEADLINE_EXCEEDED",
}

// apiStatus returns the status name for an HTTP status, or UNKNOWN.
func apiStatus(httpStatus int) string {
	if name, ok := apiStatuses[httpStatus]; ok {
		return name
	}
	return "UNKNOWN"
}
