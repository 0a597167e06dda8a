package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// Scenario k: an HTTP 429 that the API takes back on the next try is
// retried, by the API backend and by the CLI alike, and answered.
func (h *harness) testStatus429Retried(t *testing.T) {
	t.Parallel()
	prompt := "e2e:status-429-retried [[fail:1:429]] [[retry-delay:0.05s]]"
	res := h.call(t, slowTimeout, "chat", map[string]any{"prompt": prompt, "model": model})
	answer, _ := success(t, res)
	if !strings.Contains(answer, "last=e2e:status-429-retried") {
		t.Errorf("answer %q", answer)
	}
	rs := h.streams("e2e:status-429-retried")
	if len(rs) != 2 || rs[0].Status != 429 || rs[1].Status != 200 {
		var got []int
		for _, r := range rs {
			got = append(got, r.Status)
		}
		t.Errorf("the fake API answered %v, want 429 then 200", got)
	}
}

// Scenario l: an HTTP 429 that lasts is retried, then a tool error naming
// it; the API backend's says how long the API asked to wait.
func (h *harness) testStatus429Exhausted(t *testing.T) {
	t.Parallel()
	res := h.call(t, slowTimeout, "chat", map[string]any{"prompt": "e2e:status-429 [[status:429]] [[retry-delay:0.05s]]", "model": model})
	h.failure(t, res, 429)
	rs := h.streams("e2e:status-429 ")
	if len(rs) < 2 {
		t.Errorf("the fake API saw %d requests for the lasting 429; the backend should have retried", len(rs))
	}
	if h.backend == "api" {
		// One try and the API backend's default three retries.
		if msg := text(t, res); len(rs) != 4 || !strings.Contains(msg, "the API asks to wait 50ms before retrying") {
			t.Errorf("the API backend tried %d times and said: %s", len(rs), msg)
		}
	}
}

// Scenario m: a call cancelled while the answer streams in ends at once,
// and the request to the API ends with it (the fake sees its client go);
// the next turn of the session does not see the cancelled one. Meanwhile
// the server's process tree shows what runs: the CLI under the one-shot
// backend, nothing under the API backend.
func (h *harness) testCancelMidStream(t *testing.T) {
	t.Parallel()
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": "e2e:cancel-mid first", "model": model})
	_, id := success(t, res)

	const marker = "e2e:cancel-mid-stream"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	params := &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": marker + " [[chunks:3]] [[stall]]", "sessionId": id}}
	params.SetProgressToken(marker)
	go func() {
		_, err := h.session.CallTool(ctx, params)
		done <- err
	}()
	h.waitArrived(t, marker)
	// Cancel once the first piece of the answer has reached the server:
	// mid-stream. (The real CLI, cancelled before its stream has begun,
	// may leave the request open and read nothing more of it.)
	if streaming := map[string]string{"api": "receiving the answer", "warm": "gemini is answering"}[h.backend]; streaming != "" {
		wctx, wcancel := context.WithTimeout(t.Context(), callTimeout)
		defer wcancel()
		if err := h.progressLog.wait(wctx, marker, streaming); err != nil {
			t.Fatalf("no progress report of the answer streaming in: %v", err)
		}
	}
	children := h.serverChildren(t)
	for _, c := range children {
		// The prompt goes on the CLI's stdin: its command line is
		// readable by every local user.
		if strings.Contains(c, marker) {
			t.Errorf("the prompt is in a CLI's /proc/PID/cmdline: %q", c)
		}
	}
	switch {
	case h.backend == "api" && len(children) > 0:
		t.Errorf("the API backend's server runs processes: %v", children)
	case h.backend == "oneshot" && len(children) == 0:
		t.Errorf("no child of the one-shot server found while the CLI answers: the process check would prove nothing")
	}
	start := time.Now()
	cancel()
	if err := <-done; err == nil {
		t.Errorf("the cancelled call returned no error")
	}
	t.Logf("the cancelled call returned after %v", time.Since(start).Round(time.Millisecond))
	wctx, wcancel := context.WithTimeout(t.Context(), callTimeout)
	defer wcancel()
	err := h.api.WaitFor(wctx, func(rs []fakeapi.Request) bool {
		for _, r := range rs {
			if strings.Contains(r.LastUserText, marker) && r.Ended {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("the fake API never saw the cancelled request end: %v", err)
	}
	t.Logf("the request ended %v after the cancel", time.Since(start).Round(time.Millisecond))

	if h.backend == "oneshot" {
		// The one-shot CLI, killed mid-turn, has already written the
		// prompt into its session file, and a resumed turn sends it again
		// in the same user content as the next prompt: with its [[stall]]
		// directive, which the fake would obey again. Only the warm and
		// API backends promise a session untouched by a cancelled turn.
		return
	}
	res = h.call(t, callTimeout, "chat-reply", map[string]any{"prompt": "e2e:cancel-mid after", "sessionId": id})
	answer, id2 := success(t, res)
	// user, model, user: the cancelled turn left nothing.
	if id2 != id || !strings.Contains(answer, "contents=3 ") {
		t.Errorf("after the cancel: %q on %s, not %s", answer, id2, id)
	}
}

// Scenario n: temperature and thinking_mode reach the API's
// generationConfig on the API backend, whose usage counts the thinking;
// the CLI backends answer without them and say so in _meta.notApplied.
func (h *harness) testTuning(t *testing.T) {
	t.Parallel()
	const thinker = "gemini-2.5-flash" // a model the fake's list says thinks
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": "e2e:tuning", "model": thinker, "temperature": 0.25, "thinking_mode": "low"})
	answer, _ := success(t, res)
	if !strings.Contains(answer, "model="+thinker+" ") {
		t.Errorf("answer %q", answer)
	}
	notApplied, _ := json.Marshal(res.Meta["notApplied"])
	r := h.stream(t, "e2e:tuning")
	var gc struct {
		Temperature    *float64 `json:"temperature"`
		ThinkingConfig *struct {
			ThinkingBudget *int `json:"thinkingBudget"`
		} `json:"thinkingConfig"`
	}
	json.Unmarshal(r.GenerationConfig, &gc)
	if h.backend == "api" {
		if gc.Temperature == nil || *gc.Temperature != 0.25 || gc.ThinkingConfig == nil || gc.ThinkingConfig.ThinkingBudget == nil ||
			*gc.ThinkingConfig.ThinkingBudget != 2048 {
			t.Errorf("generationConfig sent: %s", r.GenerationConfig)
		}
		if res.Meta["notApplied"] != nil {
			t.Errorf("_meta.notApplied = %s, want none", notApplied)
		}
		usage, _ := res.Meta["usage"].(map[string]any)
		if usage["thinkingTokens"] != float64(fakeapi.ThoughtTokens) || usage["promptTokens"] == nil || usage["outputTokens"] == nil {
			t.Errorf("_meta.usage = %v", res.Meta["usage"])
		}
		return
	}
	if !strings.Contains(string(notApplied), `"temperature: the Gemini CLI takes no per-call temperature"`) ||
		!strings.Contains(string(notApplied), `"thinking_mode: the Gemini CLI takes no per-call thinking budget"`) {
		t.Errorf("_meta.notApplied = %s", notApplied)
	}
	if gc.Temperature != nil && *gc.Temperature == 0.25 {
		t.Errorf("the CLI sent the call's temperature after all, yet the result says it did not: %s", r.GenerationConfig)
	}
}

// waitArrived waits until the fake API has received the turn (not the
// CLI's model-router call before it) whose prompt holds marker, answered
// or not.
func (h *harness) waitArrived(t *testing.T, marker string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout) // a failure guard only
	defer cancel()
	if _, err := h.api.WaitStream(ctx, marker); err != nil {
		t.Fatalf("no request with %q reached the fake API: %v", marker, err)
	}
}

// serverChildren lists the live processes whose parent is the server, by
// their command lines.
func (h *harness) serverChildren(t *testing.T) []string {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("needs /proc")
	}
	var out []string
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 {
			continue
		}
		// After the command's ")": state, then the parent's pid.
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(h.cmd.Process.Pid) || f[0] == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		out = append(out, string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// checkNoInvocations checks that the API backend never ran its --gemini,
// which records every run.
func (h *harness) checkNoInvocations(t *testing.T) {
	b, err := os.ReadFile(h.invocations)
	if err == nil {
		t.Errorf("the API backend ran the Gemini CLI: %s", b)
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// progressLog keeps the progress messages a client session received, by
// progress token.
type progressLog struct {
	mu      sync.Mutex
	msgs    map[string][]string
	changed chan struct{} // closed and replaced on every message
}

func (p *progressLog) add(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	token, _ := req.Params.ProgressToken.(string)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.msgs == nil {
		p.msgs = map[string][]string{}
	}
	p.msgs[token] = append(p.msgs[token], req.Params.Message)
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// wait waits for a progress message of token that holds substr.
func (p *progressLog) wait(ctx context.Context, token, substr string) error {
	for {
		p.mu.Lock()
		for _, m := range p.msgs[token] {
			if strings.Contains(m, substr) {
				p.mu.Unlock()
				return nil
			}
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
