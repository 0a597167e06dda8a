package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// logSession finds the session a server log line (slog's text format) names.
var logSession = regexp.MustCompile(` session=([0-9a-f-]{36})`)

// TestE2EWarmSpare checks, on the real CLI, that a new chat served from a
// spare session (made ahead of time after the first chat) answers as a
// fresh session in the right folder, with the model set at call time, and
// that the spare left at shutdown leaves no file behind.
func TestE2EWarmSpare(t *testing.T) {
	t.Parallel()
	h := start(t, "warm")
	work := t.TempDir()
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": "e2e:spare first", "model": model, "cwd": work})
	_, first := success(t, res)
	res = h.call(t, callTimeout, "chat", map[string]any{"prompt": "e2e:spare second", "model": model, "cwd": work})
	answer, second := success(t, res)
	if second == first {
		t.Fatal("the second chat continued the first")
	}
	for _, want := range []string{"model=" + model, "contents=1", "e2e:spare second"} {
		if !strings.Contains(answer, want) {
			t.Errorf("answer %q does not contain %q", answer, want)
		}
	}
	req := h.stream(t, "e2e:spare second")
	real, _ := filepath.EvalSymlinks(work)
	if req.Model != model || (!strings.Contains(string(req.Body), work) && !strings.Contains(string(req.Body), real)) {
		t.Errorf("the spare's request: model %q, cwd %s not in it", req.Model, work)
	}
	h.checkSessionFile(t, second)
	h.shutdown(t)

	// The log names the spare that served the second chat, and every
	// spare discarded, whose file must be gone.
	served, discarded := false, 0
	for _, line := range strings.Split(h.stderr.String(), "\n") {
		id := logSession.FindStringSubmatch(line)
		switch {
		case id == nil:
		case strings.Contains(line, `msg="a new chat uses a spare session"`):
			served = served || id[1] == second
		case strings.Contains(line, `msg="discarded a spare session"`):
			discarded++
			if !strings.Contains(line, "fileRemoved=true") {
				t.Errorf("the file of spare %s was not removed: %s", id[1], line)
			}
			files, _ := filepath.Glob(filepath.Join(h.home, ".gemini", "tmp", "*", "chats", "session-*-"+id[1][:8]+".jsonl"))
			if len(files) != 0 {
				t.Errorf("spare %s left %v", id[1], files)
			}
		}
	}
	if !served || discarded == 0 {
		t.Errorf("second chat from a spare: %v; spares discarded at shutdown: %d", served, discarded)
	}
}
