package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// The tests of the --acp mode drive the fake as a real process over its stdin and stdout, as
// the warm-pool backend does.

// withACPLog returns a copy of the sandbox that logs received ACP messages, and the log's path.
func (s *sandbox) withACPLog() (*sandbox, string) {
	path := filepath.Join(s.t.TempDir(), "acp.jsonl")
	return s.with(geminitest.EnvACPLog + "=" + path), path
}

// errDetails returns data.details of an error response.
func errDetails(t *testing.T, m acpMsg) string {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("want an error, got %s", m.line)
	}
	var d struct {
		Details string `json:"details"`
	}
	json.Unmarshal(m.Error.Data, &d)
	return d.Details
}

func TestACPHandshakeTurnsAndOneShot(t *testing.T) {
	t.Parallel()
	s, acpLog := newSandbox(t).withACPLog()
	p := s.startACP()

	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
		AuthMethods     []struct {
			ID string `json:"id"`
		} `json:"authMethods"`
		AgentInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"agentInfo"`
		AgentCapabilities struct {
			LoadSession bool `json:"loadSession"`
		} `json:"agentCapabilities"`
	}
	p.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, &init)
	if init.ProtocolVersion != 1 || init.AgentInfo.Name != "gemini-cli" || init.AgentInfo.Version != geminitest.DefaultVersion ||
		!init.AgentCapabilities.LoadSession || len(init.AuthMethods) != 4 || init.AuthMethods[1].ID != "gemini-api-key" {
		t.Errorf("initialize answered %+v", init)
	}
	p.mustCall("authenticate", map[string]any{"methodId": "gemini-api-key"}, nil)

	info := p.newSession(s.dir)
	if !uuidV4.MatchString(info.SessionID) || info.Modes.CurrentModeID != "default" || info.Models.CurrentModelID != geminitest.ACPAutoModel {
		t.Errorf("session/new answered %+v", info)
	}
	// A new session is stored at once, but nothing lists it before its first turn.
	if r := s.run("--list-sessions").mustSucceed(t); !strings.Contains(r.stdout, "No previous sessions") {
		t.Errorf("an unprompted session is listed:\n%s", r.stdout)
	}

	for i, prompt := range []string{"hello\nworld", "second turn"} {
		r := p.prompt(info.SessionID, prompt)
		if want := geminitest.Answer(i+1, geminitest.DefaultModel, "", prompt); r.answer() != want || r.chunks() != 1 {
			t.Errorf("turn %d answered %q in %d chunks, want %q in 1", i+1, r.answer(), r.chunks(), want)
		}
		var res struct {
			StopReason string `json:"stopReason"`
			Meta       struct {
				Quota struct {
					ModelUsage []struct {
						Model string `json:"model"`
					} `json:"model_usage"`
				} `json:"quota"`
			} `json:"_meta"`
		}
		json.Unmarshal(r.resp.Result, &res)
		if res.StopReason != "end_turn" || len(res.Meta.Quota.ModelUsage) != 1 || res.Meta.Quota.ModelUsage[0].Model != geminitest.DefaultModel {
			t.Errorf("turn %d response %s", i+1, r.resp.line)
		}
	}

	// The session lives in the one-shot store: a one-shot run continues it, and lists it.
	stored := s.readStoredSession(t, info.SessionID)
	if turns, _ := stored["turns"].([]any); len(turns) != 2 || stored["title"] != "hello" || stored["empty"] != nil {
		t.Errorf("stored %v", stored)
	}
	id, response := s.runJSON(t, "-r", info.SessionID, "third")
	if want := geminitest.Answer(3, geminitest.DefaultModel, "", "third"); id != info.SessionID || response != want {
		t.Errorf("one-shot resume answered %s %q, want %q", id, response, want)
	}

	if code := p.closeStdin(); code != 0 {
		t.Errorf("EOF on stdin ended the fake with %d, want 0", code)
	}
	invs := s.invocations()
	if len(invs) < 1 || !slices.Equal(invs[0].Argv, []string{"--acp"}) || invs[0].Pid != p.cmd.Process.Pid || invs[0].Prompt != "" {
		t.Errorf("invocation log %+v", invs)
	}
	msgs, err := geminitest.ReadACPLog(acpLog)
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, m := range msgs {
		methods = append(methods, m.Method)
		if m.Pid != p.cmd.Process.Pid || m.Time.IsZero() || len(m.ID) == 0 {
			t.Errorf("logged %+v", m)
		}
	}
	want := []string{"initialize", "authenticate", "session/new", "session/prompt", "session/prompt"}
	if !slices.Equal(methods, want) {
		t.Errorf("logged methods %v, want %v", methods, want)
	}
	if len(msgs) == len(want) && (msgs[3].SessionID() != info.SessionID || !strings.Contains(string(msgs[3].Params), "hello\\nworld")) {
		t.Errorf("logged prompt %+v", msgs[3])
	}
}

func TestACPModelAndMode(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.startACP("-m", "gemini-m", "-o", "json", "--skip-trust")
	p.initialize()
	a, b := p.newSession(s.dir), p.newSession(s.dir)
	if a.Models.CurrentModelID != "gemini-m" {
		t.Errorf("currentModelId %q with -m gemini-m", a.Models.CurrentModelID)
	}
	p.mustCall("session/set_model", map[string]any{"sessionId": a.SessionID, "modelId": "gemini-set"}, nil)
	// session/set_model overrides -m, for its session only.
	if got, want := p.mustAnswer(a.SessionID, "x"), geminitest.Answer(1, "gemini-set", "", "x"); got != want {
		t.Errorf("after set_model: %q, want %q", got, want)
	}
	if got, want := p.mustAnswer(b.SessionID, "x"), geminitest.Answer(1, "gemini-m", "", "x"); got != want {
		t.Errorf("other session: %q, want %q", got, want)
	}
	// "auto" lets the real CLI's router choose; the fake's answers then name its default model.
	p.mustCall("session/set_model", map[string]any{"sessionId": b.SessionID, "modelId": geminitest.ACPAutoModel}, nil)
	if got, want := p.mustAnswer(b.SessionID, "y"), geminitest.Answer(2, geminitest.DefaultModel, "", "y"); got != want {
		t.Errorf("after set_model auto: %q, want %q", got, want)
	}

	e := s.with("GEMINI_MODEL=gemini-env").startACP("-y")
	info := e.newSession(s.dir)
	if info.Models.CurrentModelID != "gemini-env" || info.Modes.CurrentModeID != "yolo" {
		t.Errorf("GEMINI_MODEL and -y gave %+v", info)
	}
	// A change of mode is announced with an agent_message_chunk before the answer; no change is not.
	for _, c := range []struct {
		mode     string
		announce bool
	}{{"yolo", false}, {"plan", true}, {"autoEdit", true}, {"default", true}} {
		from := e.count()
		resp := e.mustCall("session/set_mode", map[string]any{"sessionId": info.SessionID, "modeId": c.mode}, nil)
		u := e.updates(info.SessionID, from, resp.seq)
		if announced := len(u) == 1 && u[0].text() == geminitest.ACPModeUpdatePrefix+c.mode; announced != c.announce {
			t.Errorf("set_mode %s sent %v before its answer", c.mode, u)
		}
	}
}

func TestACPSystemPromptIsReadOnce(t *testing.T) {
	t.Parallel()
	s := newSandbox(t).with("GEMINI_SYSTEM_MD=sys.md")
	path := filepath.Join(s.dir, "sys.md")
	writeFile(t, path, "first system\nmore")
	p := s.startACP()
	info := p.newSession(s.dir)
	writeFile(t, path, "second system")
	if got, want := p.mustAnswer(info.SessionID, "q"), geminitest.Answer(1, geminitest.DefaultModel, "first system\nmore", "q"); got != want {
		t.Errorf("answered %q, want %q", got, want)
	}
	if inv := s.lastInvocation(); inv.SystemMd != "first system\nmore" || inv.SystemMdPath != path {
		t.Errorf("logged system prompt %q from %q", inv.SystemMd, inv.SystemMdPath)
	}

	// A missing file does not stop the process, but fails initialize and session/new.
	m := s.with("GEMINI_SYSTEM_MD=missing.md").startACP()
	want := "Failed to initialize chat: missing system prompt file '" + filepath.Join(s.dir, "missing.md") + "'"
	for _, method := range []string{"initialize", "session/new"} {
		r := m.call(method, map[string]any{"protocolVersion": 1, "cwd": s.dir, "mcpServers": []any{}})
		if got := errDetails(t, r); r.Error.Code != codeInternal || got != want {
			t.Errorf("%s: %s, want details %q", method, r.line, want)
		}
	}
}

// TestACPConcurrentSessions: a prompt on one session is answered while
// another session's prompt hangs (it never ends by itself, so the answer
// cannot be waiting behind it).
func TestACPConcurrentSessions(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.startACP()
	a, b := p.newSession(s.dir), p.newSession(s.dir)
	idA, fromA := p.startPrompt(a.SessionID, "[[hang]] a")
	rb := p.prompt(b.SessionID, "b")
	if want := geminitest.Answer(1, geminitest.DefaultModel, "", "b"); rb.stopReason() != "end_turn" || rb.answer() != want {
		t.Errorf("b: %s %q, want %q", rb.resp.line, rb.answer(), want)
	}
	for _, m := range p.messages() {
		if m.Method == "" && string(m.ID) == fmt.Sprint(idA) {
			t.Fatalf("the hanging prompt answered: %s", m.line)
		}
	}
	p.notify("session/cancel", map[string]any{"sessionId": a.SessionID})
	if ra := p.finish(a.SessionID, idA, fromA); ra.stopReason() != "cancelled" {
		t.Errorf("the cancelled prompt on a answered %s", ra.resp.line)
	}
	if got, want := p.mustAnswer(a.SessionID, "a"), geminitest.Answer(1, geminitest.DefaultModel, "", "a"); got != want {
		t.Errorf("a after the cancel: %q, want %q", got, want)
	}
}

func TestACPSecondPromptAbortsFirst(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.startACP()
	info := p.newSession(s.dir)
	first, from := p.startPrompt(info.SessionID, "[[sleep:10000]] first")
	r2 := p.prompt(info.SessionID, "second")
	r1 := p.finish(info.SessionID, first, from)
	if r1.stopReason() != "cancelled" || r1.resp.line != fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"cancelled"}}`, first) {
		t.Errorf("the aborted prompt answered %s", r1.resp.line)
	}
	// The aborted turn is not saved, so the second prompt is turn 1, and it answers after the first.
	if want := geminitest.Answer(1, geminitest.DefaultModel, "", "second"); r2.stopReason() != "end_turn" || r2.answer() != want {
		t.Errorf("second prompt: %s %q, want %q", r2.resp.line, r2.answer(), want)
	}
	if chunks := p.updates(info.SessionID, from, r2.resp.seq); len(chunks) == 0 || r1.resp.seq > r2.resp.seq-len(chunks) {
		t.Errorf("the cancelled answer (#%d) came after the second prompt's chunks (before #%d)", r1.resp.seq, r2.resp.seq)
	}
}

func TestACPCancel(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.startACP()
	info := p.newSession(s.dir)
	for _, prompt := range []string{"[[sleep:10000]] slow", "[[hang]]"} {
		start := time.Now()
		id, from := p.startPrompt(info.SessionID, prompt)
		p.notify("session/cancel", map[string]any{"sessionId": info.SessionID})
		if r := p.finish(info.SessionID, id, from); r.stopReason() != "cancelled" || len(r.updates) != 0 {
			t.Errorf("cancelled %q answered %s with %d updates", prompt, r.resp.line, len(r.updates))
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("cancelling %q took %v", prompt, elapsed)
		}
	}
	// Cancelling nothing, or an unknown session, is answered by nothing and harms nothing.
	p.notify("session/cancel", map[string]any{"sessionId": info.SessionID})
	p.notify("session/cancel", map[string]any{"sessionId": "nope"})
	p.notify("no/such/notification", map[string]any{})
	if got, want := p.mustAnswer(info.SessionID, "after"), geminitest.Answer(1, geminitest.DefaultModel, "", "after"); got != want {
		t.Errorf("after cancelled turns: %q, want %q", got, want)
	}
	for _, m := range p.messages() {
		if m.Method == "" && m.Error != nil {
			t.Errorf("a notification was answered: %s", m.line)
		}
	}
}

// TestACPLoadReplaysHistory loads, in a later minute, sessions started by --acp and by a one-shot
// run, and checks the replay and the turns after it.
func TestACPLoadReplaysHistory(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	earlier := s.with(geminitest.EnvNowOffset + "=-10m")
	a := earlier.startACP("-m", "gemini-a")
	info := a.newSession(s.dir)
	a.mustAnswer(info.SessionID, "one")
	r := a.prompt(info.SessionID, "two [[tool:read_file]] [[chunks:3]]")
	var kinds []string
	for _, u := range r.updates {
		kinds = append(kinds, u.Update.SessionUpdate+"/"+u.Update.Status)
	}
	wantKinds := []string{"tool_call/in_progress", "tool_call_update/completed", "agent_message_chunk/", "agent_message_chunk/", "agent_message_chunk/"}
	if !slices.Equal(kinds, wantKinds) || r.updates[0].Update.Title != "read_file" || r.updates[0].Update.Kind != "read" ||
		r.answer() != geminitest.Answer(2, "gemini-a", "", "two [[tool:read_file]] [[chunks:3]]") {
		t.Errorf("tool turn: updates %v, answer %q", kinds, r.answer())
	}
	a.mustAnswer(info.SessionID, "three [[stdout:40]]")
	a.closeStdin()

	b := s.startACP()
	b.initialize()
	from := b.count()
	resp := b.mustCall("session/load", map[string]any{"sessionId": info.SessionID, "cwd": s.dir, "mcpServers": []any{}}, nil)
	var res map[string]any
	json.Unmarshal(resp.Result, &res)
	if _, ok := res["sessionId"]; ok || res["modes"] == nil || !strings.Contains(resp.line, `"currentModelId":"auto"`) {
		t.Errorf("session/load answered %s", resp.line)
	}
	last := b.waitFor("available_commands_update after the replay", resp.seq, func(m acpMsg) bool {
		return strings.Contains(m.line, "available_commands_update")
	})
	replay := b.updates(info.SessionID, from, last.seq)
	if before := b.updates(info.SessionID, from, resp.seq); len(before) != 1 {
		t.Errorf("%d updates before the answer, want 1 (as the real CLI, which answers after the first)", len(before))
	}
	var got []string
	for _, u := range replay {
		got = append(got, u.Update.SessionUpdate+": "+u.text()+u.Update.Title)
	}
	want := []string{
		"user_message_chunk: " + sessionContext(s.dir),
		"user_message_chunk: one",
		"agent_message_chunk: " + geminitest.Answer(1, "gemini-a", "", "one"),
		"user_message_chunk: two [[tool:read_file]] [[chunks:3]]",
		"tool_call: read_file",
		"user_message_chunk: [Function Response: read_file]",
		"agent_message_chunk: " + geminitest.Answer(2, "gemini-a", "", "two [[tool:read_file]] [[chunks:3]]"),
		"user_message_chunk: three [[stdout:40]]",
		"agent_message_chunk: " + variedText(40, "fake-gemini answer line %d\n"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("replay:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := b.mustAnswer(info.SessionID, "four"), geminitest.Answer(4, geminitest.DefaultModel, "", "four"); got != want {
		t.Errorf("after load: %q, want %q", got, want)
	}

	// A session started one-shot loads too.
	oneShot, _ := earlier.runJSON(t, "-m", "gemini-o", "from one-shot")
	from = b.count()
	resp = b.mustCall("session/load", map[string]any{"sessionId": oneShot, "cwd": s.dir, "mcpServers": []any{}}, nil)
	last = b.waitFor("available_commands_update after the one-shot replay", resp.seq, func(m acpMsg) bool {
		return strings.Contains(m.line, "available_commands_update") && strings.Contains(m.line, oneShot)
	})
	if u := b.updates(oneShot, from, last.seq); len(u) != 3 || u[1].text() != "from one-shot" ||
		u[2].text() != geminitest.Answer(1, "gemini-o", "", "from one-shot") {
		t.Errorf("one-shot replay %+v", u)
	}
}

// TestACPLoadInSameMinute checks the mirror of upstream bug #28775, with the clock pinned to the
// start of a minute so that the test cannot straddle two.
func TestACPLoadInSameMinute(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	offsetFile := filepath.Join(t.TempDir(), "offset")
	offset := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute))
	s = s.with(geminitest.EnvNowOffset+"="+offset.String(), geminitest.EnvNowOffsetFile+"="+offsetFile)
	p := s.startACP()
	info := p.newSession(s.dir)
	p.mustAnswer(info.SessionID, "one")
	load := func(id string) acpMsg {
		return p.call("session/load", map[string]any{"sessionId": id, "cwd": s.dir, "mcpServers": []any{}})
	}
	if r := load(info.SessionID); r.Error == nil || r.Error.Code != codeInternal || errDetails(t, r) != geminitest.ACPNoSessionsMessage {
		t.Errorf("same-minute load answered %s", r.line)
	}
	// The load wiped the stored turns: nothing lists or resumes the session any more.
	if stored := s.readStoredSession(t, info.SessionID); stored["empty"] != true || len(stored["turns"].([]any)) != 0 {
		t.Errorf("stored after the failed load: %v", stored)
	}
	s.run("-r", info.SessionID, "x").mustFail(t, 42, "Invalid session identifier")

	// The live session keeps its turns in memory, and the store gets only the turns after the wipe.
	if got, want := p.mustAnswer(info.SessionID, "two"), geminitest.Answer(2, geminitest.DefaultModel, "", "two"); got != want {
		t.Errorf("after the failed load: %q, want %q", got, want)
	}
	if _, response := s.runJSON(t, "-r", info.SessionID, "three"); response != geminitest.Answer(2, geminitest.DefaultModel, "", "three") {
		t.Errorf("one-shot after the wipe answered %q: the store should hold one turn", response)
	}

	// With another session visible, the same bug reads "Invalid session identifier".
	other := p.newSession(s.dir)
	p.mustAnswer(other.SessionID, "other")
	if r := load(other.SessionID); !strings.HasPrefix(errDetails(t, r), `Invalid session identifier "`+other.SessionID+`".`) {
		t.Errorf("same-minute load beside another session answered %s", r.line)
	}

	// Moving the clock of the running process past the minute makes loads work.
	writeFile(t, offsetFile, "5m")
	from := p.count()
	if r := load(info.SessionID); r.Error != nil {
		t.Fatalf("load five minutes later: %s", r.line)
	}
	last := p.waitFor("end of replay", from, func(m acpMsg) bool { return strings.Contains(m.line, "available_commands_update") })
	var texts []string
	for _, u := range p.updates(info.SessionID, from, last.seq)[1:] {
		texts = append(texts, u.text())
	}
	want := []string{"two", geminitest.Answer(2, geminitest.DefaultModel, "", "two"), "three", geminitest.Answer(2, geminitest.DefaultModel, "", "three")}
	if !slices.Equal(texts, want) {
		t.Errorf("replay after the wipe:\n%q\nwant\n%q", texts, want)
	}
	if r := load("00000000-0000-4000-8000-000000000000"); !strings.HasPrefix(errDetails(t, r), "Invalid session identifier") {
		t.Errorf("unknown session: %s", r.line)
	}
	empty := s.subdir("empty")
	if r := p.call("session/load", map[string]any{"sessionId": info.SessionID, "cwd": empty.dir, "mcpServers": []any{}}); errDetails(t, r) != geminitest.ACPNoSessionsMessage {
		t.Errorf("load in a directory without sessions: %s", r.line)
	}
}

func TestACPPermission(t *testing.T) {
	t.Parallel()
	s, acpLog := newSandbox(t).withACPLog()
	p := s.startACP()
	info := p.newSession(s.dir)
	base := func(n int, prompt string) string { return geminitest.Answer(n, geminitest.DefaultModel, "", prompt) }

	type permReq struct {
		SessionID string `json:"sessionId"`
		Options   []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
			Status     string `json:"status"`
			Kind       string `json:"kind"`
			Locations  []struct {
				Path string `json:"path"`
			} `json:"locations"`
		} `json:"toolCall"`
	}
	for i, c := range []struct {
		outcome map[string]any
		want    string
		update  bool
	}{
		{map[string]any{"outcome": "selected", "optionId": "proceed_once"}, "proceed_once", true},
		{map[string]any{"outcome": "cancelled"}, "cancelled", false},
		{map[string]any{"outcome": "selected", "optionId": "cancel"}, "cancel", false},
	} {
		prompt := fmt.Sprintf("write %d [[permission]]", i)
		id, from := p.startPrompt(info.SessionID, prompt)
		req := p.nextRequest("session/request_permission")
		var params permReq
		json.Unmarshal(req.Params, &params)
		if string(req.ID) != fmt.Sprint(i) || params.SessionID != info.SessionID || len(params.Options) != 3 ||
			params.Options[1].OptionID != "proceed_once" || params.ToolCall.Status != "pending" || params.ToolCall.Kind != "edit" ||
			len(params.ToolCall.Locations) != 1 || params.ToolCall.Locations[0].Path != filepath.Join(s.dir, permissionFile) {
			t.Errorf("permission request %s", req.line)
		}
		p.reply(req.ID, map[string]any{"outcome": c.outcome})
		r := p.finish(info.SessionID, id, from)
		if want := geminitest.AnswerWithPermission(base(i+1, prompt), c.want); r.answer() != want || r.stopReason() != "end_turn" {
			t.Errorf("answered %q, want %q", r.answer(), want)
		}
		hasUpdate := len(r.updates) > 0 && r.updates[0].Update.SessionUpdate == "tool_call_update" && r.updates[0].Update.Status == "completed"
		if hasUpdate != c.update {
			t.Errorf("outcome %v: updates %+v", c.outcome, r.updates)
		}
	}

	// session/cancel while the request is pending: the prompt answers cancelled once the client
	// has answered the request, and the allowed write still happens first.
	id, from := p.startPrompt(info.SessionID, "cancelled write [[permission]]")
	req := p.nextRequest("session/request_permission")
	p.notify("session/cancel", map[string]any{"sessionId": info.SessionID})
	time.Sleep(200 * time.Millisecond)
	for _, m := range p.messages()[from:] {
		if m.Method == "" && string(m.ID) == fmt.Sprint(id) {
			t.Fatalf("the prompt answered before its permission request: %s", m.line)
		}
	}
	p.reply(req.ID, map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_always"}})
	if r := p.finish(info.SessionID, id, from); r.stopReason() != "cancelled" || len(r.updates) != 1 || r.updates[0].Update.SessionUpdate != "tool_call_update" {
		t.Errorf("cancelled during the request: %s, updates %+v", r.resp.line, r.updates)
	}

	// In yolo mode nothing is asked.
	p.mustCall("session/set_mode", map[string]any{"sessionId": info.SessionID, "modeId": "yolo"}, nil)
	r := p.prompt(info.SessionID, "yolo write [[permission]]")
	if want := geminitest.AnswerWithPermission(base(4, "yolo write [[permission]]"), "yolo"); r.answer() != want || len(r.updates) != 3 {
		t.Errorf("yolo: %q (want %q), updates %+v", r.answer(), want, r.updates)
	}

	msgs, err := geminitest.ReadACPLog(acpLog)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, m := range msgs {
		if m.Method == "" {
			answers = append(answers, string(m.ID)+" "+string(m.Result))
		}
	}
	if len(answers) != 4 || !strings.HasPrefix(answers[0], `0 {"outcome":{"optionId":"proceed_once","outcome":"selected"}}`) {
		t.Errorf("logged answers to the agent's requests: %q", answers)
	}
}

func TestACPErrors(t *testing.T) {
	t.Parallel()
	s, acpLog := newSandbox(t).withACPLog()
	p := s.startACP()
	info := p.newSession(s.dir)

	r := p.call("foo/bar", map[string]any{})
	if r.line != fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"\"Method not found\": foo/bar","data":{"method":"foo/bar"}}}`, r.ID) {
		t.Errorf("unknown method: %s", r.line)
	}
	if r := p.call("session/prompt", promptParams("nope", "x")); r.Error == nil || r.Error.Code != codeInvalidParams || r.Error.Message != "Session not found: nope" {
		t.Errorf("unknown session: %s", r.line)
	}
	if r := p.call("session/set_mode", map[string]any{"sessionId": info.SessionID, "modeId": "bogus"}); errDetails(t, r) != "Invalid or unavailable mode: bogus" {
		t.Errorf("bad mode: %s", r.line)
	}
	r = p.call("session/new", map[string]any{"mcpServers": []any{}})
	if r.Error == nil || r.Error.Code != codeInternal ||
		string(r.Error.Data) != `[{"expected":"string","code":"invalid_type","path":["cwd"],"message":"Invalid input: expected string, received undefined"}]` {
		t.Errorf("session/new without cwd: %s", r.line)
	}
	// A line that is not JSON-RPC gets no answer; the next request still works.
	before := p.count()
	p.writeLine("this is not json")
	p.writeLine(`{"jsonrpc":"2.0","id":777}`)
	p.mustCall("session/set_model", map[string]any{"sessionId": info.SessionID, "modelId": geminitest.DefaultModel}, nil)
	if got := p.count() - before; got != 1 {
		t.Errorf("%d messages for 2 bad lines and a request, want 1", got)
	}

	for _, c := range []struct {
		exit    int
		code    int
		message string
	}{
		{144, 400, `{"error":{"code":400,"message":"fake api error 400","status":"INVALID_ARGUMENT"}}`},
		{148, 500, "fake api error 404"},
		{173, 429, `{"error":{"code":429,"message":"fake api error 429","status":"RESOURCE_EXHAUSTED"}}`},
		{53, codeInternal, "Internal error"},
		{255, codeInternal, "Internal error"},
	} {
		r := p.prompt(info.SessionID, fmt.Sprintf("fail [[exit:%d]]", c.exit))
		if r.resp.Error == nil || r.resp.Error.Code != c.code || r.resp.Error.Message != c.message || len(r.updates) != 0 {
			t.Errorf("[[exit:%d]] answered %s", c.exit, r.resp.line)
		}
	}
	// Failed turns are not saved.
	if got, want := p.mustAnswer(info.SessionID, "ok"), geminitest.Answer(1, geminitest.DefaultModel, "", "ok"); got != want {
		t.Errorf("after failures: %q, want %q", got, want)
	}
	msgs, err := geminitest.ReadACPLog(acpLog)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(msgs, func(m geminitest.ACPMessage) bool { return m.Raw == "this is not json" }) {
		t.Errorf("the log lacks the line that is not JSON: %+v", msgs)
	}
}

func TestACPChunks(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.startACP()
	info := p.newSession(s.dir)
	for i, c := range []struct {
		prompt string
		chunks int
	}{{"[[chunks:5]] ünïcödé", 5}, {"[[chunks:0]]", 1}, {"[[empty]]", 0}} {
		r := p.prompt(info.SessionID, c.prompt)
		want := geminitest.Answer(i+1, geminitest.DefaultModel, "", c.prompt)
		if c.chunks == 0 {
			want = ""
		}
		if r.answer() != want || r.chunks() != c.chunks {
			t.Errorf("%q: %d chunks of %q, want %d of %q", c.prompt, r.chunks(), r.answer(), c.chunks, want)
		}
	}
	if got := splitChunks("abc", 10); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("splitChunks(abc, 10) = %q", got)
	}
}

func TestACPCrash(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.startACP()
	info := p.newSession(s.dir)
	id, _ := p.startPrompt(info.SessionID, "[[sleep:100]] [[crash]]")
	if code := p.waitExit(); code != 1 {
		t.Errorf("[[crash]] exited %d, want 1", code)
	}
	if !strings.Contains(p.stderr.String(), crashLine) {
		t.Errorf("stderr %q", p.stderr)
	}
	for _, m := range p.messages() {
		if string(m.ID) == fmt.Sprint(id) {
			t.Errorf("the crashed prompt answered %s", m.line)
		}
	}
}

func TestACPEndsOnEOFAndSelfTimeout(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.startACP()
	info := p.newSession(s.dir)
	p.startPrompt(info.SessionID, "[[sleep:20000]]")
	start := time.Now()
	if code := p.closeStdin(); code != 0 || time.Since(start) > 5*time.Second {
		t.Errorf("EOF with a pending prompt: exit %d after %v", code, time.Since(start))
	}

	q := s.with(geminitest.EnvSelfTimeout + "=500ms").startACP()
	if code := q.waitExit(); code != geminitest.ExitSelfTimeout {
		t.Errorf("an idle --acp process exited %d, want the self-timeout's %d", code, geminitest.ExitSelfTimeout)
	}
}

func TestACPFlagAliases(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.startACP("--experimental-acp", "--approval-mode", "auto_edit")
	if info := p.newSession(s.dir); info.Modes.CurrentModeID != "autoEdit" {
		t.Errorf("--approval-mode auto_edit gave mode %q", info.Modes.CurrentModeID)
	}
	if r := s.run("--acp", "--bogus"); r.code != 1 {
		t.Errorf("--acp with an unknown flag exited %d, want 1", r.code)
	}
}

// TestACPNoAPIKey: without credentials, as the real CLI, the process
// starts and initializes, and session/new fails with the auth error.
func TestACPNoAPIKey(t *testing.T) {
	t.Parallel()
	s := newSandbox(t).with(geminitest.EnvNoAPIKey + "=1")
	p := s.startACP()
	p.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, nil)
	want := fmt.Sprintf(`"error":{"code":%d,"message":%q}`, geminitest.ACPAuthRequiredCode, geminitest.ACPNoAPIKeyMessage)
	if r := p.call("session/new", map[string]any{"cwd": s.dir, "mcpServers": []any{}}); !strings.Contains(r.line, want) {
		t.Errorf("session/new answered %s", r.line)
	}
	if r := s.run("-p", "hi", "--output-format", "json"); r.code != 41 {
		t.Errorf("one-shot: exit %d", r.code)
	}
}
