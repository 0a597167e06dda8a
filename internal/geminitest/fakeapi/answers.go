package fakeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Answer returns the text the Server streams back for a turn: it names the
// model, the number of contents, whether a system instruction was present,
// and the first 40 runes of the last user text.
func Answer(model string, numContents int, system, lastUserText string) string {
	sys := "no"
	if system != "" {
		sys = "yes"
	}
	return fmt.Sprintf("fake-api answer: model=%s contents=%d system=%s last=%s",
		model, numContents, sys, firstRunes(lastUserText, 40))
}

// LongAnswer returns answer lengthened to n bytes (when it is shorter) by
// numbered filler lines, so that every page of it differs from the others.
func LongAnswer(answer string, n int) string {
	var b strings.Builder
	b.WriteString(answer)
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "\nfiller line %d of a long fake answer", i)
	}
	s := b.String()
	if len(s) > n && n >= len(answer) {
		s = s[:n]
	}
	return s
}

// FunctionResultAnswer returns the text the Server streams back for a
// request that carries the results of function calls: each call's name and
// its response object, as compact JSON, one per line.
func FunctionResultAnswer(responses []FunctionResponse) string {
	var b strings.Builder
	b.WriteString("fake-api answer: function results:")
	for _, r := range responses {
		resp := r.Response
		var buf bytes.Buffer
		if json.Compact(&buf, resp) == nil {
			resp = buf.Bytes()
		}
		fmt.Fprintf(&b, "\n%s returned %s", r.Name, resp)
	}
	return b.String()
}

// ErrorMessage returns the message of the error the Server answers for
// [[status:N]].
func ErrorMessage(status int) string { return fmt.Sprintf("fake error %d", status) }

func firstRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// split cuts s into n pieces of about equal length, on rune boundaries;
// none is empty unless s is shorter than n runes.
func split(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	if n > runes {
		n = max(runes, 1)
	}
	out := make([]string, 0, n)
	for i := n; i > 0; i-- {
		k := utf8.RuneCountInString(s) / i
		j := len(firstRunes(s, k))
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}
