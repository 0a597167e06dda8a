// Package msg holds what every package's error messages and log lines
// share: quoting another program's words without letting them run long.
package msg

import "unicode/utf8"

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
