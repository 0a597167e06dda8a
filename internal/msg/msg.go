// Package msg holds what every package's error messages and log lines
// share: quoting another program's words without letting them run long.
package msg

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Clip shortens s to at most n bytes (plus an ellipsis), at a character
// boundary, for inclusion in an error message or a log line.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Words is s, another program's words, as an error or a log line quotes
// them: on one line (line breaks and tabs as spaces), without control
// characters (a terminal's escapes), trimmed and clipped to n bytes.
func Words(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			return -1
		}
		return r
	}, Clip(s, 4*n))
	return Clip(strings.TrimSpace(s), n)
}

// QuoteName returns a file name as it may stand in a prompt or a result's
// text: as it is when it is made of printable characters other than '"'
// and '\' and holds no "---" (the marker of the file headers), else
// quoted in Go's syntax ("a\n--- BEGIN…"), so that no name can end its line
// or pass for a header.
func QuoteName(name string) string {
	if !utf8.ValidString(name) || strings.Contains(name, "---") {
		return strconv.Quote(name)
	}
	for _, r := range name {
		if r == '"' || r == '\\' || !strconv.IsPrint(r) {
			return strconv.Quote(name)
		}
	}
	return name
}

// ClipPath is err with the path of a *fs.PathError in it clipped to n
// bytes, so that a message quoting err does not quote a path of a
// megabyte (one too long for the system) whole.
func ClipPath(err error, n int) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && len(pe.Path) > n {
		return &fs.PathError{Op: pe.Op, Path: Clip(pe.Path, n), Err: pe.Err}
	}
	return err
}
