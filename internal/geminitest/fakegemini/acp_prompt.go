package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// promptRun is one session/prompt in progress.
type promptRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	// settled is closed once the prompt has answered, or is waiting for the client to answer a
	// permission request; settle closes it.
	settled chan struct{}
	once    sync.Once
}

func (r *promptRun) settle() { r.once.Do(func() { close(r.settled) }) }

// startPrompt answers session/prompt {sessionId, prompt: [content blocks]}. It registers the
// prompt at once, so that a session/cancel read right after it finds it, and then runs it on its
// own goroutine. Like the real CLI, a new prompt aborts the session's pending one, which answers
// cancelled.
func (s *acpServer) startPrompt(m rpcIncoming) {
	var p struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"prompt"`
	}
	if rerr := checkParams(m.Params, &p, [2]string{"sessionId", "string"}, [2]string{"prompt", "array"}); rerr != nil {
		s.respond(m.ID, nil, rerr)
		return
	}
	a := s.lookup(p.SessionID)
	if a == nil {
		s.respond(m.ID, nil, sessionNotFound(p.SessionID))
		return
	}
	// The real CLI sends each text block to the model as a part of its own; the fake's prompt is
	// their concatenation. Other blocks (images, resources) are ignored.
	var text strings.Builder
	for _, block := range p.Prompt {
		if block.Type == "text" {
			text.WriteString(block.Text)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &promptRun{ctx: ctx, cancel: cancel, settled: make(chan struct{})}
	a.mu.Lock()
	prev := a.run
	if prev != nil {
		prev.cancel()
	}
	a.run = run
	a.mu.Unlock()
	go func() {
		defer cancel()
		// The aborted prompt answers cancelled before this one starts, as it does in the real CLI,
		// unless it is waiting for a permission answer: then it answers once that arrives.
		if prev != nil {
			<-prev.settled
		}
		result, rerr := s.prompt(a, run, p.SessionID, text.String())
		a.mu.Lock()
		if a.run == run {
			a.run = nil
		}
		a.mu.Unlock()
		s.respond(m.ID, result, rerr)
		run.settle()
	}()
}

// cancelled is the answer to a prompt that session/cancel or a newer prompt aborted.
var cancelled = promptResult{StopReason: "cancelled"}

// prompt runs one prompt to its answer: the directives' misbehaviour, then the turn saved and its
// answer streamed as agent_message_chunk updates. An aborted turn is not saved.
func (s *acpServer) prompt(a *acpSession, run *promptRun, sessionID, text string) (any, *rpcError) {
	d := parseDirectives(text)
	if d.stderrBytes > 0 {
		writeNoise(os.Stderr, d.stderrBytes)
	}
	if d.allocMB > 0 {
		allocate(d.allocMB)
	}
	if d.badJSON {
		s.out.writeRaw([]byte("this is not json\n"))
	}
	if d.ignoreTerm {
		ignoreSignals()
	}
	if d.child {
		inv := s.inv
		var err error
		if inv.ChildPid, err = startChild(); err != nil {
			return nil, internalError(err.Error())
		}
		if err := writeLog(inv); err != nil {
			return nil, internalError(err.Error())
		}
	}
	wait := d.sleep
	if d.blocks() {
		fmt.Fprintf(os.Stderr, "%s (pid %d)\n", hangingLine, os.Getpid())
		wait = time.Duration(1<<63 - 1)
	}
	if !sleep(run.ctx, wait) {
		return cancelled, nil
	}
	if d.signal != 0 {
		killSelf(d.signal)
	}
	if d.crash {
		fmt.Fprintf(os.Stderr, "%s (pid %d)\n", crashLine, os.Getpid())
		os.Exit(1)
	}

	a.mu.Lock()
	mode := a.mode
	a.mu.Unlock()
	if d.tool != "" {
		s.runTool(sessionID, d.tool)
	}
	outcome := ""
	if d.permission {
		outcome = s.askPermission(run, a, sessionID, mode)
	}
	if run.ctx.Err() != nil {
		return cancelled, nil
	}
	if d.exitCode != 0 {
		return nil, promptFailure(d.exitCode)
	}

	// The turn is saved under the session's lock after a last look for cancellation, so that a
	// cancelled turn is never saved and a saved turn is never answered cancelled.
	a.mu.Lock()
	if run.ctx.Err() != nil {
		a.mu.Unlock()
		return cancelled, nil
	}
	model := s.answerModel(a)
	n := len(a.data.Turns) + 1
	answer := responseFor(d, n, model, &request{prompt: text, system: s.system, directives: d})
	if d.permission {
		answer = geminitest.AnswerWithPermission(answer, outcome)
	}
	t := newTurn(n-a.wiped, text, model, s.system, answer)
	t.Tool = d.tool
	a.data.Turns = append(a.data.Turns, t)
	err := a.save()
	a.chats.turn(text, answer)
	if a.run == run && !d.holdEnd {
		a.run = nil
	}
	a.mu.Unlock()
	if err != nil {
		return nil, internalError(err.Error())
	}
	for _, chunk := range splitChunks(answer, d.chunks) {
		s.notify(sessionID, agentChunk(chunk))
	}
	if d.holdEnd {
		<-run.ctx.Done()
		return cancelled, nil
	}
	res := endTurn(model)
	if d.stop != "" {
		res.StopReason = d.stop
	}
	return res, nil
}

// sleep waits for d or until ctx is done, and reports whether it waited the whole time.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// runTool pretends to run the tool name, as the real CLI reports a tool that needs no permission:
// tool_call in progress, then tool_call_update completed.
func (s *acpServer) runTool(sessionID, name string) {
	id := toolCallID(name)
	noLocations := []rpcLocation{}
	s.notify(sessionID, toolCall{SessionUpdate: "tool_call", ToolCallID: id, Status: "in_progress",
		Title: name, Content: []any{}, Locations: &noLocations, Kind: toolKind(name)})
	s.notify(sessionID, toolCall{SessionUpdate: "tool_call_update", ToolCallID: id, Status: "completed",
		Title: name, Content: []any{toolOutput(name)}, Locations: &noLocations, Kind: toolKind(name)})
}

// toolCallID makes a tool call id the way the real CLI does: NAME__NAME_<unix ms>_<index>.
func toolCallID(name string) string {
	return fmt.Sprintf("%s__%s_%d_0", name, name, now().UnixMilli())
}

// toolOutput is what the fake's tool calls report.
func toolOutput(name string) toolTextContent {
	return toolTextContent{Type: "content", Content: textContent{Type: "text", Text: "fake-gemini ran " + name}}
}

// permissionFile is the file that [[permission]] pretends to write in the session's directory.
const permissionFile = "fake-permission.txt"

// askPermission pretends that the model wants to write a file, which needs the client's
// permission, and returns the outcome: the selected optionId, "cancelled", or the mode that
// approved the write without asking (yolo, autoEdit).
//
// Like the real CLI, it waits for the client's answer even when the prompt is cancelled in the
// meantime, and a write the client allowed still happens (tool_call_update completed) before the
// prompt answers cancelled.
func (s *acpServer) askPermission(run *promptRun, a *acpSession, sessionID, mode string) string {
	path := filepath.Join(a.store.cwd, permissionFile)
	locations := []rpcLocation{{Path: path}}
	call := toolCall{
		ToolCallID: toolCallID("write_file"), Status: "pending", Title: "Writing to " + permissionFile,
		Content: []any{toolDiffContent{Type: "diff", Path: path, NewText: "fake-gemini permission",
			Meta: map[string]string{"kind": "add"}}},
		Locations: &locations, Kind: "edit",
	}
	completed := call
	completed.SessionUpdate, completed.Status = "tool_call_update", "completed"

	if mode == "yolo" || mode == "autoEdit" {
		started := call
		started.SessionUpdate, started.Status, started.Content = "tool_call", "in_progress", []any{}
		s.notify(sessionID, started)
		s.notify(sessionID, completed)
		return mode
	}
	answer := s.ask("session/request_permission", permissionParams{
		SessionID: sessionID, Options: permissionOptionsJSON, ToolCall: call,
	}, run.settle)
	var pa permissionAnswer
	if (len(answer.Error) > 0 && string(answer.Error) != "null") || json.Unmarshal(answer.Result, &pa) != nil || pa.Outcome.Outcome != "selected" {
		return "cancelled"
	}
	if strings.HasPrefix(pa.Outcome.OptionID, "proceed_") {
		s.notify(sessionID, completed)
	}
	return pa.Outcome.OptionID
}

// promptFailure is the error a prompt with [[exit:N]] answers, shaped like the real CLI's API
// errors: for N an API status modulo 256 (see failureFor) the code is that HTTP status and the
// message the API's error body, except that a 404 comes back as code 500 with the bare message.
// Other exit codes have no ACP counterpart; they answer an internal error carrying the one-shot
// error message.
func promptFailure(exit int) *rpcError {
	f := failureFor(exit)
	api := exit >= 144 && f.Code == exit+256
	switch {
	case api && f.Code == 404:
		return &rpcError{Code: 500, Message: "fake api error 404"}
	case api:
		return &rpcError{Code: f.Code, Message: f.Message}
	default:
		return internalError(f.Message)
	}
}

// splitChunks cuts text into n pieces of about the same number of runes (one piece when n < 2),
// leaving out empty ones. An empty text has no pieces.
func splitChunks(text string, n int) []string {
	runes := []rune(text)
	if n < 2 {
		n = 1
	}
	var chunks []string
	for i := range n {
		piece := string(runes[i*len(runes)/n : (i+1)*len(runes)/n])
		if piece != "" {
			chunks = append(chunks, piece)
		}
	}
	return chunks
}

// ballast holds what [[alloc:MB]] allocated, for the rest of the process's life.
var ballast struct {
	sync.Mutex
	blocks [][]byte
}

// allocate allocates mb megabytes and writes to every page of them, so that they count in the
// process's resident memory, and keeps them.
func allocate(mb int) {
	block := make([]byte, mb<<20)
	for i := 0; i < len(block); i += 4096 {
		block[i] = 1
	}
	ballast.Lock()
	ballast.blocks = append(ballast.blocks, block)
	ballast.Unlock()
}

// crashLine is what [[crash]] writes to stderr before the process exits with code 1.
const crashLine = "fake-gemini: crashing"
