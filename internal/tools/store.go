package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// storeError turns an error of the session store into what the caller
// needs: when the store itself failed (it is down, its disk full), that
// the call can be retried, since nothing reached Gemini. Other errors (a
// bad id) pass as they are.
func storeError(err error) error {
	if errors.Is(err, session.ErrUnavailable) {
		return fmt.Errorf("the session store is unavailable (%w), so nothing was sent to Gemini. The call can be retried: "+
			"it will work once the store is back (the server's operator can check it with gemini-mcp-server doctor)", err)
	}
	return err
}

// checkTurns refuses to continue session id once it has reached
// --max-turns: a conversation cannot grow without bound in the store, and
// each turn resends or rereads all the ones before it.
func (d *Deps) checkTurns(ctx context.Context, id string) error {
	rec, ok, err := d.Store.Get(ctx, id)
	if err != nil {
		return storeError(err)
	}
	if ok && rec.Turns >= d.MaxTurns {
		return fmt.Errorf("session %s has reached the limit of %d turns (--max-turns): start a new session with chat, "+
			"giving it what it needs of this conversation (ask for a summary first if it helps), or ask the server's operator to raise --max-turns", id, d.MaxTurns)
	}
	return nil
}

// titleChars is about how long a session's title is.
const titleChars = 60

// Title is what the sessions tool shows of a session: the opening words
// of its first prompt, on one line, whole words up to about 60 characters,
// with "…" when the prompt goes on.
func Title(prompt string) string {
	words := strings.Fields(prompt)
	var b strings.Builder
	for i, w := range words {
		if b.Len() > 0 && utf8.RuneCountInString(b.String())+1+utf8.RuneCountInString(w) > titleChars {
			return b.String() + " …"
		}
		if b.Len() == 0 && utf8.RuneCountInString(w) > titleChars {
			// One long word (a URL, a path): its start.
			r := []rune(w)
			return string(r[:titleChars]) + "…"
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}
