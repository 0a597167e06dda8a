package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// The CLI's session files in its directory (clihome.Dir of the process's
// environment): a spare's file, and its removal when the spare goes unused.

// maxSessionFile bounds the size of a file removeSessionFile reads: an
// unused session's file is about 2 KB.
const maxSessionFile = 64 << 10

// sessionFiles are the files of session id in the CLI's store in cliDir
// (see removeSessionFile).
func sessionFiles(cliDir, id string) ([]string, error) {
	if cliDir == "" || !session.IsUUID(id) {
		return nil, nil
	}
	return filepath.Glob(filepath.Join(cliDir, "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
}

// sessionFile is the file of session id in the CLI's store in cliDir, ""
// if there is none.
func sessionFile(cliDir, id string) string {
	files, _ := sessionFiles(cliDir, id)
	if len(files) == 0 {
		return ""
	}
	return files[0]
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// removeSessionFile removes the file that an unused session left in the
// CLI's store in cliDir (the CLI's directory, clihome.Dir):
// tmp/<project>/chats/session-<time>-<first 8 of id>.jsonl. It
// removes only a file every record of which is this session's header or
// the context the CLI writes at session/new, so it never touches another
// session or one that holds a turn. It reports whether it removed one.
func removeSessionFile(cliDir, id string) (bool, error) {
	files, err := sessionFiles(cliDir, id)
	if err != nil {
		return false, err
	}
	removed := false
	for _, f := range files {
		if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSessionFile {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil || !unusedSessionFile(data, id) {
			continue
		}
		if err := os.Remove(f); err != nil {
			return removed, err
		}
		removed = true
	}
	return removed, nil
}

// unusedSessionFile reports whether data, a CLI session file, holds
// nothing but session id's headers and its start-up context.
func unusedSessionFile(data []byte, id string) bool {
	headers := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var rec struct {
			SessionID *string `json:"sessionId"`
			Set       *struct {
				Messages []struct {
					Type    string `json:"type"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"messages"`
			} `json:"$set"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			return false
		}
		switch {
		case rec.SessionID != nil && rec.Set == nil:
			if !strings.EqualFold(*rec.SessionID, id) {
				return false
			}
			headers++
		case rec.Set != nil && rec.SessionID == nil:
			for _, m := range rec.Set.Messages {
				if m.Type != "user" || len(m.Content) != 1 || !strings.HasPrefix(m.Content[0].Text, "<session_context>") {
					return false
				}
			}
		default:
			return false
		}
	}
	return headers > 0
}
