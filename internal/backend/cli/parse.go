package cli

import (
	"errors"
	"regexp"
	"strings"
	"sync"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// ListedSession is one line of `gemini --list-sessions`.
type ListedSession struct {
	Index int
	Title string
	When  string
	ID    string
}

var listLineRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*([0-9]+)\.\s(.*)\s\(([^()]*)\)\s+\[([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\]\s*$`)
})

// ParseSessionList reads the text of `gemini --list-sessions`: a header
// line, then `  <i>. <title> (<when>) [<uuid>]` per session, oldest first.
// "No previous sessions found" gives an empty list and no error; text with
// neither a header nor session lines is an error.
func ParseSessionList(text string) ([]ListedSession, error) {
	var out []ListedSession
	sawHeader := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.Contains(line, "No previous sessions found") {
			sawHeader = true
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "Available sessions for this project") {
			sawHeader = true
			continue
		}
		m := listLineRE().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		idx := 0
		for _, c := range m[1] {
			idx = idx*10 + int(c-'0')
			if idx > 1<<24 {
				break
			}
		}
		out = append(out, ListedSession{Index: idx, Title: m[2], When: m[3], ID: strings.ToLower(m[4])})
	}
	if !sawHeader && len(out) == 0 {
		return nil, errors.New("unrecognised --list-sessions output")
	}
	return out, nil
}

// Newest returns the most recently started session of a list, which the
// CLI prints last.
func Newest(list []ListedSession) (ListedSession, bool) {
	if len(list) == 0 {
		return ListedSession{}, false
	}
	return list[len(list)-1], true
}

// The warnings of the CLI's JSON output (0.61.0) that say it stopped a
// turn before the model had finished.
const (
	loopWarning  = "Loop detected, stopping execution"
	turnsWarning = "Maximum session turns exceeded"
)

// stoppedEarly marks ans, once its session is known, as cut short when
// the CLI's warnings say it stopped the turn: its loop detector, or its
// limit on a session's turns. The CLI keeps the turn in its session,
// which goes on from it. (An answer the model ended at its output limit
// looks whole here: the CLI's JSON has no finish reason.)
func stoppedEarly(ans *backend.Answer, warnings []string) {
	for _, w := range warnings {
		var reason, why string
		switch {
		case strings.HasPrefix(w, loopWarning):
			reason, why = "loop_detected", "its loop detector"
		case strings.HasPrefix(w, turnsWarning):
			reason, why = "max_session_turns", "its limit on a session's turns (model.maxSessionTurns)"
		default:
			continue
		}
		ans.Incomplete = "The answer may be cut short: the Gemini CLI stopped the turn (" + why + "). " +
			"The Gemini CLI keeps the turn in its session"
		if ans.SessionID != "" {
			ans.Incomplete += ": chat-reply with sessionId " + ans.SessionID + " goes on from it"
		}
		ans.Incomplete += "."
		ans.IncompleteKept, ans.FinishReason = true, reason
		return
	}
}
