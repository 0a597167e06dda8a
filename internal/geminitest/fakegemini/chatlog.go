package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// chatLog mirrors the real CLI's own session file, which it writes at session/new under
// <GEMINI_CLI_HOME>/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of id>.jsonl:
// a header record naming the session, then the session's messages (first the context the CLI
// writes at creation) as "$set" records. The fake's own store is elsewhere; this file exists so
// that a client cleaning up the files of sessions it never used can be tested. The fake writes it
// only when GEMINI_CLI_HOME is set, never into a user's real ~/.gemini.
type chatLog struct {
	path     string
	messages []chatMessage
}

type chatMessage struct {
	Type    string        `json:"type"`
	Content []chatContent `json:"content"`
}

type chatContent struct {
	Text string `json:"text"`
}

// newChatLog writes the file of a new session id in cwd, or returns nil when GEMINI_CLI_HOME is
// unset or the file cannot be written.
func newChatLog(id, cwd string) *chatLog {
	home := os.Getenv("GEMINI_CLI_HOME")
	if home == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(cwd))
	project := hex.EncodeToString(sum[:])
	now := time.Now().UTC()
	dir := filepath.Join(home, ".gemini", "tmp", project[:12], "chats")
	if os.MkdirAll(dir, 0o700) != nil {
		return nil
	}
	l := &chatLog{path: filepath.Join(dir, "session-"+strings.ReplaceAll(now.Format("2006-01-02T15:04"), ":", "-")+"-"+id[:8]+".jsonl")}
	header, _ := json.Marshal(map[string]any{"sessionId": id, "projectHash": project, "startTime": now, "lastUpdated": now, "kind": "main"})
	if os.WriteFile(l.path, append(header, '\n'), 0o600) != nil {
		return nil
	}
	l.add(chatMessage{Type: "user", Content: []chatContent{{Text: sessionContext(cwd)}}})
	return l
}

// turn records a prompt and its answer.
func (l *chatLog) turn(prompt, answer string) {
	if l == nil {
		return
	}
	l.add(chatMessage{Type: "user", Content: []chatContent{{Text: prompt}}}, chatMessage{Type: "gemini", Content: []chatContent{{Text: answer}}})
}

// add appends messages, as a "$set" of all of them, like the real CLI.
func (l *chatLog) add(msgs ...chatMessage) {
	l.messages = append(l.messages, msgs...)
	rec, _ := json.Marshal(map[string]any{"$set": map[string]any{"messages": l.messages, "lastUpdated": time.Now().UTC()}})
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(rec, '\n'))
}
