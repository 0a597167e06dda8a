// Package geminitest provides a fake Gemini CLI for tests, and the types and rules that tests
// share with it.
//
// The fake lives in the fakegemini sub-directory. It is a real executable, so the argv, the
// environment, stdin, the exit code and the timing that a wrapper sees are real too. Build it once
// per test binary with [RunWithFake] from TestMain, or with [BuildFake]. Every suite that runs it
// gives it its environment with [FakeEnv], builds the server with [BuildTestServer] (under -race
// when the suite runs under it, see [RaceEnabled]), checks a server's stderr with [CheckStderr],
// and asks whether a process still runs with [Alive].
//
// The fake mirrors @google/gemini-cli 0.61.0 in headless mode: the flags, the plain-text and JSON
// output formats, sessions keyed by the exact working directory, exit codes and the noise on
// stderr. Its answer is a deterministic function of its input (see [Answer]), so tests can assert
// on it. Directives written anywhere in the prompt make it misbehave:
//
//	[[exit:N]]      fail with exit code N (those of 144..255 whose N+256 is a status the Gemini
//	                API answers with are API errors of that status; 255, say, is an error's
//	                own code); the turn is not saved
//	[[nosession]]   leave session_id out of the JSON output; the session is still saved
//	[[empty]]       answer with an empty response
//	[[loop]]        add the warning "Loop detected, stopping execution" to the JSON output, as
//	                the real CLI does when its loop detector stopped the turn (json format only)
//	[[badjson]]     print "this is not json" on stdout and exit 0
//	[[sleep:MS]]    sleep MS milliseconds before answering
//	[[hang]]        block until killed or until the self-timeout
//	[[ignoreterm]]  ignore SIGINT and SIGTERM, then hang
//	[[child]]       start a child process in the same process group, then hang
//	[[stdout:N]]    make the response exactly N bytes of varied text
//	[[stderr:N]]    write N bytes of noise to stderr before the normal output
//	[[signal:N]]    kill itself with signal N (9 is SIGKILL), after any [[sleep:MS]]; on Windows,
//	                exit with code 1 (in --acp mode, while answering the prompt)
//
// Every invocation exits by itself with [ExitSelfTimeout] after [EnvSelfTimeout] (default
// [DefaultSelfTimeout]), so a broken test cannot leave a process behind for long. When [EnvLog]
// names a file, every invocation appends one [Invocation] to it as a JSON line; read it back with
// [ReadLog].
//
// # The long-lived mode
//
// gemini --acp [-m MODEL] [-y | --approval-mode MODE] mirrors the real CLI's Agent Client
// Protocol mode: newline-delimited JSON-RPC 2.0 on stdin and stdout, with the real CLI's field
// names, shapes, error codes and messages, as captured in testdata/acp-transcript.jsonl. Other
// one-shot flags are accepted and ignored. It answers initialize, authenticate, session/new
// {cwd, mcpServers}, session/load {sessionId, cwd, mcpServers}, session/set_model {sessionId,
// modelId}, session/set_mode {sessionId, modeId} and session/prompt {sessionId, prompt}, and
// takes the notification session/cancel {sessionId}; other methods get JSON-RPC method-not-found,
// and lines that are not JSON-RPC get no answer at all. EOF on stdin ends the process with exit
// code 0; the self-timeout applies as in one-shot runs. The process logs one [Invocation] when it
// starts, and [EnvACPLog] logs every message it receives ([ACPMessage], [ReadACPLog]).
//
// Sessions live in the same store as one-shot sessions, keyed by the session's cwd, so a session
// started with --acp resumes one-shot with -r and the other way round. A prompt's answer is
// Answer(turn, model, systemPrompt, prompt), streamed as agent_message_chunk updates whose texts
// concatenate to it, followed by the response {stopReason: "end_turn", _meta: {quota}}; the
// prompt is the concatenation of the text blocks. The model is the session's session/set_model
// choice, else -m, else GEMINI_MODEL, else [DefaultModel] (currentModelId then reads
// [ACPAutoModel]); as in the real CLI, session/set_model overrides -m. A model of "auto" (the
// real CLI's router) also answers as [DefaultModel]. The system prompt is read
// from GEMINI_SYSTEM_MD once, when the process starts; a missing file fails initialize,
// session/new and session/load. session/load replays the history as user_message_chunk and
// agent_message_chunk updates, answering after the first of them as the real CLI does.
//
// The real CLI's bugs are mirrored: a second prompt on a session aborts the pending one, which
// answers {stopReason: "cancelled"}; a cancelled or failed turn is not saved; session/cancel
// while a permission request is pending answers the prompt only once the client has answered that
// request; session/load of a session created in the current clock minute fails and wipes the
// session's stored turns (upstream #28775, see [ACPNoSessionsMessage]). The clock can be moved
// with [EnvNowOffset] and [EnvNowOffsetFile]. Prompts on different sessions run concurrently, and
// sessions are never freed.
//
// In --acp prompts, [[sleep:MS]], [[empty]], [[stdout:N]], [[stderr:N]], [[ignoreterm]] and
// [[child]] work as in one-shot runs, except that [[hang]] and the directives that hang block the
// prompt only until it is cancelled; [[nosession]] does nothing. These directives behave
// differently or only work there:
//
//	[[exit:N]]      answer with a JSON-RPC error shaped like the real CLI's API errors: for N an
//	                API status modulo 256 (as above), code N+256 and the API's JSON error body
//	                as message (a 404 comes back as code 500 "fake api error 404"); other N,
//	                code -32603
//	[[tool:NAME]]   report a tool call NAME (tool_call, then tool_call_update) before answering
//	[[permission]]  ask session/request_permission to write fake-permission.txt in the session's
//	                cwd and wait for the answer; the answer text ends with " permission=OUTCOME"
//	                (see [AnswerWithPermission]); in yolo and autoEdit modes nothing is asked
//	[[crash]]       exit with code 1 at once, after any [[sleep:MS]], without answering
//	[[chunks:N]]    stream the answer in N chunks of about equal length
//	[[alloc:MB]]    allocate MB megabytes, touched, and keep them for the life of the process
//	[[badjson]]     write a line that is not JSON on stdout before answering
//	[[holdend]]     after streaming the answer, answer the prompt only once it is cancelled, and
//	                then with {stopReason: "cancelled"} (the turn stays saved)
//	[[stop:REASON]] answer the prompt with stopReason REASON (e.g. max_turn_requests, as the real
//	                CLI does when its loop detector stops a turn) instead of end_turn
package geminitest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Environment variables that steer the fake. Other variables the fake reads are the real CLI's
// own: GEMINI_SYSTEM_MD, GEMINI_MODEL and HOME.
const (
	// EnvHome is the directory under which the fake keeps its sessions. When it is unset the fake
	// uses $HOME/.fake-gemini.
	EnvHome = "FAKE_GEMINI_HOME"
	// EnvLog names a file to which every invocation appends one JSON line (see [Invocation]).
	EnvLog = "FAKE_GEMINI_LOG"
	// EnvSelfTimeout is a Go duration after which any invocation exits with [ExitSelfTimeout].
	EnvSelfTimeout = "FAKE_GEMINI_SELF_TIMEOUT"
	// EnvVersion is what --version prints; it defaults to [DefaultVersion].
	EnvVersion = "FAKE_GEMINI_VERSION"
	// EnvNoSessionIDFlag set to "1" makes --session-id an unknown flag, as in CLIs before it existed.
	EnvNoSessionIDFlag = "FAKE_GEMINI_NO_SESSION_ID_FLAG"
)

// Defaults of the fake.
const (
	// DefaultModel is the model used when neither -m nor GEMINI_MODEL names one.
	DefaultModel = "gemini-2.5-pro"
	// DefaultVersion is what --version prints when [EnvVersion] is unset.
	DefaultVersion = "0.61.0-fake"
	// DefaultSelfTimeout is how long an invocation may live when [EnvSelfTimeout] is unset.
	DefaultSelfTimeout = 60 * time.Second
	// ExitSelfTimeout is the exit code of an invocation that ran into its self-timeout.
	ExitSelfTimeout = 99
)

// Answer returns the response text the fake gives for prompt. turn is the 1-based number of the
// turn within its session, counting this one; model is the model in use; systemPrompt is the
// content of the GEMINI_SYSTEM_MD file, or "" when there is none.
//
// The text shows everything a wrapper could get wrong: the system prompt's first line ("none" when
// that line is empty), the prompt's length in bytes, the first 12 hex digits of its SHA-256, and its
// first 60 runes with each "\n" and "\r" replaced by a space.
func Answer(turn int, model, systemPrompt, prompt string) string {
	system := firstLine(systemPrompt)
	if system == "" {
		system = "none"
	}
	sum := sha256.Sum256([]byte(prompt))
	head := strings.NewReplacer("\n", " ", "\r", " ").Replace(firstRunes(prompt, 60))
	return fmt.Sprintf("fake-gemini turn=%d model=%s system=%s len=%d sha256=%s prompt=%s",
		turn, model, system, len(prompt), hex.EncodeToString(sum[:])[:12], head)
}

// SessionDir returns the directory in which the fake keeps the sessions started in cwd. home is
// the fake's home: $FAKE_GEMINI_HOME, or $HOME/.fake-gemini. Like the real CLI, the fake keys
// sessions by the exact working directory, so cwd must be spelled as the fake's os.Getwd sees it.
func SessionDir(home, cwd string) string {
	sum := sha256.Sum256([]byte(cwd))
	return filepath.Join(home, "sessions", hex.EncodeToString(sum[:])[:16])
}

// SessionTitle returns the title the fake gives a session whose first prompt is prompt: its first
// line, cut to 40 runes. --list-sessions shows it.
func SessionTitle(prompt string) string {
	return firstRunes(firstLine(prompt), 40)
}

// firstLine returns s up to its first line break, without a trailing "\r".
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSuffix(line, "\r")
}

// firstRunes returns at most the first n runes of s.
func firstRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
