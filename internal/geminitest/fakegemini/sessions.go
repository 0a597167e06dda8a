package main

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// session is one conversation as the fake stores it: one JSON file per session.
type session struct {
	ID      string `json:"id"`
	Cwd     string `json:"cwd"`
	Created string `json:"created"`
	Title   string `json:"title"`
	Turns   []turn `json:"turns"`
	// Empty marks a session that has no messages for the real CLI, so that it cannot be listed,
	// resumed or loaded: one that --acp started but has not saved a turn of, or one whose turns
	// upstream bug #28775 wiped.
	Empty bool `json:"empty,omitempty"`

	created time.Time
}

// turn is one prompt of a session and what it was sent with.
type turn struct {
	Prompt       string `json:"prompt"`
	Model        string `json:"model"`
	SystemPrompt string `json:"systemPrompt"`
	// Response is the answer given, stored only when it is not the answer that the turn's number
	// and the fields above give (see geminitest.Answer), as after [[stdout:N]] or [[permission]].
	// session/load replays it.
	Response *string `json:"response,omitempty"`
	// Tool is the tool that [[tool:NAME]] pretended to call in this turn; session/load replays it.
	Tool string `json:"tool,omitempty"`
}

// newTurn returns the turn that answered prompt with text as the session's turn number n.
func newTurn(n int, prompt, model, system, text string) turn {
	t := turn{Prompt: prompt, Model: model, SystemPrompt: system}
	if text != geminitest.Answer(n, model, system, prompt) {
		t.Response = &text
	}
	return t
}

// answer returns the text the turn, the session's turn number n, was answered with.
func (t turn) answer(n int) string {
	if t.Response != nil {
		return *t.Response
	}
	return geminitest.Answer(n, t.Model, t.SystemPrompt, t.Prompt)
}

// store holds the sessions of one working directory, like the real CLI's per-project chats.
type store struct {
	dir string
	cwd string
}

// uuidPattern matches the textual form of a UUID.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// openStore returns the store of the sessions started in cwd.
func openStore(cwd string) (store, error) {
	home := os.Getenv(geminitest.EnvHome)
	if home == "" {
		userHome, err := os.UserHomeDir()
		if err != nil {
			return store{}, fmt.Errorf("finding the fake's home: %w", err)
		}
		home = filepath.Join(userHome, ".fake-gemini")
	}
	return store{dir: geminitest.SessionDir(home, cwd), cwd: cwd}, nil
}

// load returns the stored sessions, oldest first. Empty sessions are left out, as the real CLI
// leaves out sessions without messages.
func (s store) load() ([]*session, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sessions []*session
	for _, e := range entries {
		// Temporary files of a write in progress start with a dot and are skipped.
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		sess, err := readSession(filepath.Join(s.dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if !sess.Empty {
			sessions = append(sessions, sess)
		}
	}
	slices.SortFunc(sessions, func(a, b *session) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return sessions, nil
}

// readSession reads one session file.
func readSession(path string) (*session, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sess session
	if err := json.Unmarshal(data, &sess); err != nil {
		return nil, fmt.Errorf("reading session %s: %w", path, err)
	}
	if sess.created, err = time.Parse(time.RFC3339Nano, sess.Created); err != nil {
		return nil, fmt.Errorf("reading session %s: %w", path, err)
	}
	return &sess, nil
}

// save writes sess atomically: to a temporary file that is then renamed over the session file,
// so a concurrent reader sees the old session or the new one, never half of one.
func (s store) save(sess *session) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(sess, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(s.dir, strings.ToLower(sess.ID)+".json"))
}

// session returns the session a run continues or starts: the one named by --resume, a new one
// with the --session-id, or a new one with a random ID.
func (s store) session(opts *options, prompt string) (*session, error) {
	switch {
	case opts.hasResume:
		return s.resume(opts.resume)
	case opts.hasSessionID:
		return s.startWithID(opts.sessionID, prompt)
	default:
		return s.start(newUUID(), prompt), nil
	}
}

// resume finds the session named by id: "latest", a 1-based index (oldest first) or a full UUID.
func (s store) resume(id string) (*session, error) {
	sessions, err := s.load()
	if err != nil {
		return nil, err
	}
	if sess := pick(sessions, id); sess != nil {
		return sess, nil
	}
	return nil, failf(42, "Error resuming session: Invalid session identifier \"%s\".\n"+
		"  Searched for sessions in %s.\n"+
		"  Use --list-sessions to see available sessions, then use --resume {number}, --resume {uuid}, or --resume latest.",
		id, s.dir)
}

// pick finds id among sessions sorted oldest first, or returns nil.
func pick(sessions []*session, id string) *session {
	if len(sessions) == 0 {
		return nil
	}
	if id == "latest" {
		return sessions[len(sessions)-1]
	}
	if n, err := strconv.Atoi(id); err == nil && strings.Trim(id, "0123456789") == "" {
		if n >= 1 && n <= len(sessions) {
			return sessions[n-1]
		}
		return nil
	}
	for _, sess := range sessions {
		if strings.EqualFold(sess.ID, id) {
			return sess
		}
	}
	return nil
}

// startWithID starts a session under an ID the caller chose, which must be a UUID not yet used in
// this working directory.
func (s store) startWithID(id, prompt string) (*session, error) {
	if !uuidPattern.MatchString(id) {
		return nil, failf(42, "Error starting session: Invalid session ID \"%s\". A session ID must be a UUID.", id)
	}
	sessions, err := s.load()
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(sessions, func(sess *session) bool { return strings.EqualFold(sess.ID, id) }) {
		return nil, failf(42, "Error starting session: Session ID \"%s\" already exists. Use --resume to resume it, or provide a different ID.", id)
	}
	return s.start(id, prompt), nil
}

// start returns a new, not yet saved session.
func (s store) start(id, prompt string) *session {
	t := now()
	return &session{
		ID:      id,
		Cwd:     s.cwd,
		Created: t.UTC().Format(time.RFC3339Nano),
		Title:   geminitest.SessionTitle(prompt),
		created: t,
	}
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// listSessions prints the sessions of cwd like the real CLI's --list-sessions.
func listSessions(cwd string) error {
	s, err := openStore(cwd)
	if err != nil {
		return err
	}
	sessions, err := s.load()
	if err != nil {
		return err
	}
	if len(sessions) == 0 {
		fmt.Println("No previous sessions found for this project.")
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nAvailable sessions for this project (%d):\n", len(sessions))
	t := now()
	for i, sess := range sessions {
		fmt.Fprintf(&b, "  %d. %s (%s) [%s]\n", i+1, sess.Title, relativeTime(t, sess.created), sess.ID)
	}
	fmt.Print(b.String())
	return nil
}

// relativeTime words the age of a session as the real CLI does.
func relativeTime(now, t time.Time) string {
	age := now.Sub(t)
	unit := func(n int, name string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s ago", name)
		}
		return fmt.Sprintf("%d %ss ago", n, name)
	}
	switch {
	case age >= 24*time.Hour:
		return unit(int(age/(24*time.Hour)), "day")
	case age >= time.Hour:
		return unit(int(age/time.Hour), "hour")
	case age >= time.Minute:
		return unit(int(age/time.Minute), "minute")
	default:
		return "Just now"
	}
}
