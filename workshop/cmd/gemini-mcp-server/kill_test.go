package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// TestKillDuringTurn kills a server with SIGKILL while Gemini holds its
// answer, for each store: a new server on the same store finds every turn
// acknowledged before the kill, nothing of the killed turn, and continues
// the session once the dead server's lease has freed itself. The embedded
// store's file passes SQLite's integrity check.
func TestKillDuringTurn(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"embedded", "redis"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel() // each waits out its dead server's lease
			e, fake := apiEnv(t)
			args := []string{"--backend", "api"}
			if store == "redis" {
				args = append(args, "--store", redistest.Start(t).URL(0))
			}
			cmd := e.command(args...)
			cs := connect(t, cmd)
			one := callOK(t, cs, "chat", map[string]any{"prompt": "turn one, acknowledged"})
			id, _ := one.Meta["sessionId"].(string)
			two := callOK(t, cs, "chat-reply", map[string]any{"prompt": "turn two, acknowledged", "sessionId": id})

			killed := make(chan error, 1)
			go func() {
				_, err := callTool(cs, "chat-reply", map[string]any{"prompt": "[[stall]] turn three, killed", "sessionId": id})
				killed <- err
			}()
			waitArrived(t, fake, "turn three, killed")
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := <-killed; err == nil {
				t.Fatal("the killed server's call succeeded")
			}

			// The new server waits for the dead one's lease, then answers.
			next := connect(t, e.command(args...))
			four := callOK(t, next, "chat-reply", map[string]any{"prompt": "turn four, after the kill", "sessionId": id})
			if four.Meta["sessionId"] != id {
				t.Fatalf("turn four went to session %v, want %s", four.Meta["sessionId"], id)
			}
			r := lastStream(t, fake, "turn four, after the kill")
			carries(t, r, "turn one, acknowledged", answerOf(one), "turn two, acknowledged", answerOf(two))
			if r.NumContents != 5 || strings.Contains(string(r.Body), "turn three") {
				t.Errorf("turn four's request has %d contents (want 5: two turns, their answers, turn four), the killed turn: %v",
					r.NumContents, strings.Contains(string(r.Body), "turn three"))
			}
			if ids := sessionIDs(t, next); len(ids) != 1 || ids[0] != id {
				t.Errorf("sessions after the kill: %q, want [%s]", ids, id)
			}
			if err := next.Close(); err != nil {
				t.Fatalf("the new server's exit: %v", err)
			}

			if store == "embedded" {
				path := filepath.Join(e.state, "sessions.db")
				if _, err := os.Stat(path); err != nil {
					t.Fatalf("the embedded store: %v", err)
				}
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				var check string
				if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
					t.Fatalf("integrity_check after kill -9: %q %v", check, err)
				}
			}
		})
	}
}
