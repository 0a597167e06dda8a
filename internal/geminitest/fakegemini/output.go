package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// printer writes a run's result in the chosen output format.
type printer struct {
	format string
	// sessionID is "" when [[nosession]] asks to leave it out.
	sessionID string
	model     string
}

// jsonOutput is the object that --output-format json prints on success.
type jsonOutput struct {
	SessionID string    `json:"session_id,omitempty"`
	Response  string    `json:"response"`
	Stats     jsonStats `json:"stats"`
	Warnings  []string  `json:"warnings,omitempty"`
}

// loopWarning is the warning the real CLI's JSON output carries when its
// loop detector stopped the turn; [[loop]] in a prompt adds it.
const loopWarning = "Loop detected, stopping execution"

// jsonFailure is the object that --output-format json prints on stderr on failure.
type jsonFailure struct {
	SessionID string     `json:"session_id,omitempty"`
	Error     apiFailure `json:"error"`
}

type jsonStats struct {
	Models map[string]modelStats `json:"models"`
	Tools  toolStats             `json:"tools"`
	Files  fileStats             `json:"files"`
}

type modelStats struct {
	API    apiStats   `json:"api"`
	Tokens tokenStats `json:"tokens"`
}

type apiStats struct {
	TotalRequests  int `json:"totalRequests"`
	TotalErrors    int `json:"totalErrors"`
	TotalLatencyMs int `json:"totalLatencyMs"`
}

type tokenStats struct {
	Input      int `json:"input"`
	Prompt     int `json:"prompt"`
	Candidates int `json:"candidates"`
	Total      int `json:"total"`
	Cached     int `json:"cached"`
	Thoughts   int `json:"thoughts"`
	Tool       int `json:"tool"`
}

type toolStats struct {
	TotalCalls int `json:"totalCalls"`
}

type fileStats struct {
	TotalLinesAdded   int `json:"totalLinesAdded"`
	TotalLinesRemoved int `json:"totalLinesRemoved"`
}

// streamEvent is one line of --output-format stream-json. Fields an event type does not use are
// left out.
type streamEvent struct {
	Type      string       `json:"type"`
	Timestamp string       `json:"timestamp"`
	SessionID string       `json:"session_id,omitempty"`
	Model     string       `json:"model,omitempty"`
	Role      string       `json:"role,omitempty"`
	Content   *string      `json:"content,omitempty"`
	Delta     bool         `json:"delta,omitempty"`
	Status    string       `json:"status,omitempty"`
	Error     *streamError `json:"error,omitempty"`
	Stats     *streamStats `json:"stats,omitempty"`
}

type streamError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type streamStats struct {
	TotalTokens  int `json:"total_tokens"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	Cached       int `json:"cached"`
	Input        int `json:"input"`
	DurationMs   int `json:"duration_ms"`
	ToolCalls    int `json:"tool_calls"`
}

// success prints a successful answer.
func (p printer) success(prompt, response string) error {
	switch p.format {
	case "json":
		fmt.Fprintln(os.Stderr, colorWarningLine)
		out := jsonOutput{SessionID: p.sessionID, Response: response, Stats: p.stats()}
		if strings.Contains(prompt, "[[loop]]") {
			out.Warnings = []string{loopWarning}
		}
		return write(encode(out, true))
	case "stream-json":
		return p.stream(prompt,
			streamEvent{Type: "message", Role: "assistant", Content: &response, Delta: true},
			streamEvent{Type: "result", Status: "success", Stats: oneCallStats()})
	default:
		return write([]byte(response + "\n"))
	}
}

// failure reports the error that goes with exit code exit, like the real CLI, and ends the run
// with that code. In json mode stdout stays empty and the error object goes to stderr twice, after
// noise and a stack trace, because the real CLI does that; in stream-json mode the error is the
// final event on stdout.
func (p printer) failure(exit int, prompt string) error {
	f := failureFor(exit)
	switch p.format {
	case "json":
		obj := encode(jsonFailure{SessionID: p.sessionID, Error: f}, true)
		var b bytes.Buffer
		fmt.Fprintln(&b, colorWarningLine)
		fmt.Fprintln(&b, "    at fn (file:///fake.js:1:1)")
		b.Write(obj)
		b.Write(obj)
		os.Stderr.Write(b.Bytes())
	case "stream-json":
		if err := p.stream(prompt, streamEvent{Type: "result", Status: "error",
			Error: &streamError{Type: f.Type, Message: f.Message}, Stats: oneCallStats()}); err != nil {
			return err
		}
	default:
		fmt.Fprintf(os.Stderr, "%s\n%s: %s\n    at fn (file:///fake.js:1:1)\n", colorWarningLine, f.Type, f.Message)
	}
	return &exitError{code: exit}
}

// stream prints the init event, the user's message and then events, one JSON object a line.
func (p printer) stream(prompt string, events ...streamEvent) error {
	events = append([]streamEvent{
		{Type: "init", SessionID: p.sessionID, Model: p.model},
		{Type: "message", Role: "user", Content: &prompt},
	}, events...)
	var b bytes.Buffer
	for _, e := range events {
		e.Timestamp = now().UTC().Format("2006-01-02T15:04:05.000Z")
		b.Write(encode(e, false))
	}
	return write(b.Bytes())
}

// stats returns the statistics of a run that made one API call.
func (p printer) stats() jsonStats {
	return jsonStats{
		Models: map[string]modelStats{p.model: {
			API:    apiStats{TotalRequests: 1, TotalLatencyMs: 1},
			Tokens: tokenStats{Input: 1, Prompt: 1, Candidates: 1, Total: 2},
		}},
	}
}

// oneCallStats returns the stream-json statistics of a run that made one API call.
func oneCallStats() *streamStats {
	return &streamStats{TotalTokens: 2, InputTokens: 1, OutputTokens: 1, Input: 1, DurationMs: 1}
}

// encode marshals v as JSON followed by a newline, pretty with two-space indents or compact.
// Like JavaScript's JSON.stringify it leaves <, > and & unescaped.
func encode(v any, pretty bool) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		panic(err) // Only the fake's own types are encoded; they always marshal.
	}
	return b.Bytes()
}

// write writes data to stdout in one call.
func write(data []byte) error {
	_, err := os.Stdout.Write(data)
	return err
}
