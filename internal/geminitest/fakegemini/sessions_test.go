package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// startSession runs one prompt in a new session and returns the session's ID.
func (s *sandbox) startSession(t *testing.T, prompt string) string {
	t.Helper()
	id, _ := s.runJSON(t, prompt)
	return id
}

// runJSON runs the fake with --output-format json and returns the session ID and response.
func (s *sandbox) runJSON(t *testing.T, args ...string) (sessionID, response string) {
	t.Helper()
	out := s.run(append([]string{"-o", "json"}, args...)...).mustSucceed(t).jsonOut(t)
	sessionID, _ = out["session_id"].(string)
	response, _ = out["response"].(string)
	return sessionID, response
}

// readStoredSession reads a session file the way a curious test would, without the fake's code.
func (s *sandbox) readStoredSession(t *testing.T, id string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.sessionDir(), id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(data, &stored); err != nil {
		t.Fatal(err)
	}
	return stored
}

func TestNewSessionIsStored(t *testing.T) {
	t.Parallel()
	s := newSandbox(t).with("GEMINI_SYSTEM_MD=sys.md")
	writeFile(t, filepath.Join(s.dir, "sys.md"), "system text")
	prompt := "a first line that is longer than forty runes, ünïcödé included\nsecond line"
	before := time.Now()
	id := s.startSession(t, prompt)
	if !uuidV4.MatchString(id) {
		t.Fatalf("session_id %q is not a random (version 4) UUID", id)
	}

	stored := s.readStoredSession(t, id)
	created, err := time.Parse(time.RFC3339Nano, stored["created"].(string))
	if err != nil || created.Before(before.Add(-time.Second)) || created.After(time.Now()) {
		t.Errorf("created %v (%v), want about now", stored["created"], err)
	}
	wantTitle := "a first line that is longer than forty r"
	if stored["id"] != id || stored["cwd"] != s.dir || stored["title"] != wantTitle {
		t.Errorf("stored id %v, cwd %v, title %q; want %s, %s, %q", stored["id"], stored["cwd"], stored["title"], id, s.dir, wantTitle)
	}
	wantTurns := []any{map[string]any{"prompt": prompt, "model": geminitest.DefaultModel, "systemPrompt": "system text"}}
	if got, want := fmt.Sprint(stored["turns"]), fmt.Sprint(wantTurns); got != want {
		t.Errorf("stored turns %s, want %s", got, want)
	}

	// The write is atomic: no temporary file is left behind.
	entries, err := os.ReadDir(s.sessionDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != id+".json" {
		t.Errorf("session directory holds %v, want only %s.json", entries, id)
	}
	if other := s.startSession(t, "again"); other == id {
		t.Errorf("two new sessions share the ID %s", id)
	}
}

func TestResume(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	first := s.startSession(t, "first session")
	second := s.startSession(t, "second session")

	tests := []struct {
		resume   []string
		wantID   string
		wantTurn int
	}{
		{[]string{"-r", "latest"}, second, 2},
		{[]string{"--resume", "1"}, first, 2},
		{[]string{"--resume=2"}, second, 3},
		{[]string{"-r", first}, first, 3},
		{[]string{"-r", strings.ToUpper(first)}, first, 4},
		{[]string{"-r"}, second, 4}, // A bare -r means latest.
	}
	for _, tt := range tests {
		// The prompt goes first, because -r takes the next word as its value.
		args := append([]string{"next"}, tt.resume...)
		id, response := s.runJSON(t, args...)
		if id != tt.wantID {
			t.Errorf("%q resumed %s, want %s", tt.resume, id, tt.wantID)
		}
		if want := geminitest.Answer(tt.wantTurn, geminitest.DefaultModel, "", "next"); response != want {
			t.Errorf("%q answered\n %s\nwant\n %s", tt.resume, response, want)
		}
	}
	if turns := s.readStoredSession(t, first)["turns"].([]any); len(turns) != 4 {
		t.Errorf("first session holds %d turns, want 4", len(turns))
	}
}

// TestResumeUsesTheLatestByCreation checks that "latest" means the newest session by start time,
// not the one used last.
func TestResumeUsesTheLatestByCreation(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	first := s.startSession(t, "first")
	second := s.startSession(t, "second")
	s.runJSON(t, "-r", first, "touch the first again")
	if id, _ := s.runJSON(t, "-r", "latest", "which?"); id != second {
		t.Errorf("latest resumed %s, want the newer session %s", id, second)
	}
}

func TestResumeFailures(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	wantError := func(id string) string {
		return fmt.Sprintf("Error resuming session: Invalid session identifier %q.\n"+
			"  Searched for sessions in %s.\n"+
			"  Use --list-sessions to see available sessions, then use --resume {number}, --resume {uuid}, or --resume latest.\n",
			id, s.sessionDir())
	}
	check := func(id string) {
		t.Helper()
		r := s.run("-r", id, "hi")
		if r.code != 42 || r.stderr != wantError(id) || r.stdout != "" {
			t.Errorf("-r %s: exit %d, stdout %q, stderr\n%s\nwant exit 42 and stderr\n%s", id, r.code, r.stdout, r.stderr, wantError(id))
		}
	}
	check("latest") // No sessions yet.
	check("1")
	id := s.startSession(t, "the only session")
	check(id[:8]) // A prefix is not enough.
	check("0")
	check("2")
	check("+1")
	check("0b8d7a4e-8a36-4d4a-9a43-3e6f6c1e2f10")
	// A session belongs to the directory it was started in.
	s.subdir("elsewhere").run("-r", id, "hi").mustFail(t, 42, "Invalid session identifier")
	s.subdir("other").run("-r", "latest", "hi").mustFail(t, 42, "Invalid session identifier")
}

func TestChosenSessionID(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	const id = "6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f"
	if got, _ := s.runJSON(t, "--session-id", id, "hi"); got != id {
		t.Fatalf("session_id %q, want %s", got, id)
	}
	r := s.run("--session-id="+id, "hi")
	r.mustFail(t, 42, `Error starting session: Session ID "`+id+`" already exists. Use --resume to resume it, or provide a different ID.`)
	s.run("--session-id", strings.ToUpper(id), "hi").mustFail(t, 42, "already exists")
	s.run("--session-id", "not-a-uuid", "hi").mustFail(t, 42, `Invalid session ID "not-a-uuid"`)
	if _, response := s.runJSON(t, "-r", id, "again"); !strings.Contains(response, "turn=2 ") {
		t.Errorf("resuming the chosen ID answered %q, want turn 2", response)
	}
	// The same ID is free in another directory.
	s.subdir("elsewhere").run("--session-id", id, "hi").mustSucceed(t)
}

func TestListSessions(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	r := s.run("--list-sessions").mustSucceed(t)
	if r.stdout != "No previous sessions found for this project.\n" {
		t.Errorf("with no sessions printed %q", r.stdout)
	}
	first := s.startSession(t, "Explain the build\nin detail")
	second := s.startSession(t, strings.Repeat("é", 50))
	s.runWith(strings.NewReader("piped"), "-o", "json", "-p", "[[exit:7]]").mustFail(t, 7, "")

	r = s.run("--list-sessions").mustSucceed(t)
	want := "\nAvailable sessions for this project (2):\n" +
		"  1. Explain the build (Just now) [" + first + "]\n" +
		"  2. " + strings.Repeat("é", 40) + " (Just now) [" + second + "]\n"
	if r.stdout != want {
		t.Errorf("listed\n%q\nwant\n%q", r.stdout, want)
	}
	if s.subdir("other").run("--list-sessions").mustSucceed(t).stdout != "No previous sessions found for this project.\n" {
		t.Error("another directory lists this directory's sessions")
	}
}

// TestListSessionsOrder checks the oldest-first order and the relative times, with sessions
// written as if they had been started earlier.
func TestListSessionsOrder(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	st := store{dir: s.sessionDir(), cwd: s.dir}
	now := time.Now()
	for _, c := range []struct {
		id  string
		age time.Duration
	}{
		{"00000000-0000-4000-8000-000000000003", 2 * time.Minute},
		{"00000000-0000-4000-8000-000000000001", 50 * time.Hour},
		{"00000000-0000-4000-8000-000000000002", 90 * time.Minute},
	} {
		sess := &session{ID: c.id, Cwd: s.dir, Created: now.Add(-c.age).UTC().Format(time.RFC3339Nano), Title: c.id[len(c.id)-1:]}
		if err := st.save(sess); err != nil {
			t.Fatal(err)
		}
	}
	r := s.run("--list-sessions").mustSucceed(t)
	want := "\nAvailable sessions for this project (3):\n" +
		"  1. 1 (2 days ago) [00000000-0000-4000-8000-000000000001]\n" +
		"  2. 2 (1 hour ago) [00000000-0000-4000-8000-000000000002]\n" +
		"  3. 3 (2 minutes ago) [00000000-0000-4000-8000-000000000003]\n"
	if r.stdout != want {
		t.Errorf("listed\n%s\nwant\n%s", r.stdout, want)
	}
	if id, _ := s.runJSON(t, "-r", "2", "hi"); id != "00000000-0000-4000-8000-000000000002" {
		t.Errorf("-r 2 resumed %s", id)
	}
}

func TestRelativeTime(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for age, want := range map[time.Duration]string{
		0:                "Just now",
		59 * time.Second: "Just now",
		time.Minute:      "1 minute ago",
		59 * time.Minute: "59 minutes ago",
		time.Hour:        "1 hour ago",
		23 * time.Hour:   "23 hours ago",
		24 * time.Hour:   "1 day ago",
		72 * time.Hour:   "3 days ago",
	} {
		if got := relativeTime(now, now.Add(-age)); got != want {
			t.Errorf("relativeTime(%v) = %q, want %q", age, got, want)
		}
	}
}
