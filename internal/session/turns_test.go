package session

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func turnJSON(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"user": "question %d\nsecond line", "model": "answer %d"}`, i, i))
}

func wantTurns(t *testing.T, s *FileStore, id string, n int) {
	t.Helper()
	turns, ok, err := s.LoadTurns(id)
	if err != nil {
		t.Fatal(err)
	}
	if ok != (n > 0) || len(turns) != n {
		t.Fatalf("session %s: %d turns (ok %v), want %d", id, len(turns), ok, n)
	}
	for i, tr := range turns {
		var v struct{ User, Model string }
		if err := json.Unmarshal(tr, &v); err != nil {
			t.Fatal(err)
		}
		if v.User != fmt.Sprintf("question %d\nsecond line", i) || v.Model != fmt.Sprintf("answer %d", i) {
			t.Fatalf("turn %d is %s", i, tr)
		}
	}
}

func TestTurnsAppendAndReload(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantTurns(t, s, idA, 0)
	for i := range 3 {
		if err := s.AppendTurn(idA, turnJSON(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A new Store on the same directory is a restarted server.
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantTurns(t, s2, strings.ToUpper(idA), 3)
	wantTurns(t, s2, idB, 0)

	data, err := os.ReadFile(filepath.Join(s.Dir(), idA+turnsSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), "\n"); got != 3 {
		t.Fatalf("the file has %d lines, want one per turn:\n%s", got, data)
	}
	fi, err := os.Stat(filepath.Join(s.Dir(), idA+turnsSuffix))
	if err != nil || isUnixLike() && fi.Mode().Perm() != 0o600 {
		t.Fatalf("turns file mode %v %v", fi.Mode(), err)
	}

	// The record store does not mistake a turns file for a record.
	if _, ok, err := s2.Latest("", nil); ok || err != nil {
		t.Fatalf("Latest found a record among turns files: %v %v", ok, err)
	}

	if err := s2.DeleteTurns(idA); err != nil {
		t.Fatal(err)
	}
	wantTurns(t, s2, idA, 0)
	if err := s2.DeleteTurns(idA); err != nil {
		t.Fatalf("deleting a session without turns: %v", err)
	}
}

func TestTurnsRefuseBadInput(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"latest", "1", "../../etc/passwd", ""} {
		if err := s.AppendTurn(id, turnJSON(0)); err == nil {
			t.Errorf("AppendTurn accepted id %q", id)
		}
		if _, _, err := s.LoadTurns(id); err == nil {
			t.Errorf("LoadTurns accepted id %q", id)
		}
	}
	if err := s.AppendTurn(idA, json.RawMessage(`{"user": `)); err == nil {
		t.Error("AppendTurn accepted a turn that is not JSON")
	}
	wantTurns(t, s, idA, 0)
	entries, _ := os.ReadDir(s.Dir())
	if len(entries) != 0 {
		t.Fatalf("refused input left files: %v", entries)
	}
}

// TestTurnsTornLastLine is a crash in the middle of an append: the torn
// line is ignored on read and cut off by the next append.
func TestTurnsTornLastLine(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := s.AppendTurn(idA, turnJSON(i)); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(s.Dir(), idA+turnsSuffix)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := `{"user": "question 2", "model": "ans`
	if _, err := f.WriteString(torn); err != nil {
		t.Fatal(err)
	}
	f.Close()

	wantTurns(t, s, idA, 2)
	if err := s.AppendTurn(idA, turnJSON(2)); err != nil {
		t.Fatal(err)
	}
	wantTurns(t, s, idA, 3)
	data, _ := os.ReadFile(p)
	if strings.Contains(string(data), torn) {
		t.Fatalf("the torn line survived the next append:\n%s", data)
	}

	// A file holding nothing but a torn first line is a session that
	// never finished its first turn.
	if err := os.WriteFile(filepath.Join(s.Dir(), idB+turnsSuffix), []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	wantTurns(t, s, idB, 0)
	if err := s.AppendTurn(idB, turnJSON(0)); err != nil {
		t.Fatal(err)
	}
	wantTurns(t, s, idB, 1)

	// A bad line before the last is damage, not a torn write: say so.
	if err := os.WriteFile(filepath.Join(s.Dir(), idC+turnsSuffix), []byte("{oops\n"+string(turnJSON(0))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.LoadTurns(idC); err == nil || !strings.Contains(err.Error(), "corrupt at line 1") {
		t.Fatalf("corrupt file: %v", err)
	}
}

func TestTurnsConcurrentAppends(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{idA, idB, idC}
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, len(ids)*2)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if err := s.AppendTurn(id, turnJSON(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
		// A second writer on the same session: every turn lands whole.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if err := s.AppendTurn(id, json.RawMessage(fmt.Sprintf(`{"extra":%d}`, i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		turns, _, err := s.LoadTurns(id)
		if err != nil {
			t.Fatal(err)
		}
		if len(turns) != 2*n {
			t.Fatalf("session %s has %d turns, want %d", id, len(turns), 2*n)
		}
	}
}
