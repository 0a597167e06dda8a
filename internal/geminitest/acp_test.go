package geminitest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadACPLog(t *testing.T) {
	dir := t.TempDir()
	msgs, err := ReadACPLog(filepath.Join(dir, "missing.jsonl"))
	if err != nil || msgs != nil {
		t.Errorf("missing log: %v, %v; want no messages and no error", msgs, err)
	}

	path := filepath.Join(dir, "acp.jsonl")
	content := `{"pid":7,"time":"2026-11-22T04:24:06.1Z","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}` + "\n" +
		`{"pid":7,"time":"2026-11-22T04:24:06.2Z","method":"session/cancel","params":{"sessionId":"s1"}}` + "\n" +
		`{"pid":7,"time":"2026-11-22T04:24:06.3Z","id":0,"result":{"outcome":{"outcome":"cancelled"}}}` + "\n" +
		`{"pid":7,"time":"2026-11-22T04:24:06.4Z","raw":"not json"}` + "\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	msgs, err = ReadACPLog(path)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("ReadACPLog = %+v, %v", msgs, err)
	}
	if m := msgs[0]; m.Pid != 7 || string(m.ID) != "3" || m.Method != "session/prompt" || m.SessionID() != "s1" || m.Time.Nanosecond() != 100_000_000 {
		t.Errorf("request %+v", m)
	}
	if m := msgs[1]; len(m.ID) != 0 || m.SessionID() != "s1" {
		t.Errorf("notification %+v", m)
	}
	if m := msgs[2]; m.Method != "" || string(m.ID) != "0" || !strings.Contains(string(m.Result), "cancelled") || m.SessionID() != "" {
		t.Errorf("response %+v", m)
	}
	if msgs[3].Raw != "not json" {
		t.Errorf("raw line %+v", msgs[3])
	}

	if err := os.WriteFile(path, []byte(content+`{"pid":7,"surprise":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if msgs, err := ReadACPLog(path); err == nil || len(msgs) != 4 {
		t.Errorf("unknown field: ReadACPLog returned %d messages and error %v; want the 4 good ones and an error", len(msgs), err)
	}
}

func TestAnswerWithPermission(t *testing.T) {
	if got := AnswerWithPermission("answer", "proceed_once"); got != "answer permission=proceed_once" {
		t.Errorf("AnswerWithPermission = %q", got)
	}
}

// TestACPTranscript checks that the captured transcript of the real CLI, which documents the
// shapes the fake mirrors, stays valid JSON Lines.
func TestACPTranscript(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "acp-transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var line struct {
			Scenario string          `json:"scenario"`
			Note     string          `json:"note"`
			Dir      string          `json:"dir"`
			Msg      json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.Scenario == "" || (line.Note == "") == (line.Dir == "") {
			t.Errorf("line %d: %v: %.200s", n, err, sc.Text())
		}
	}
	if err := sc.Err(); err != nil || n < 100 {
		t.Errorf("read %d lines: %v", n, err)
	}
}
