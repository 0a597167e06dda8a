package mcphost

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

// TestStderrLines: a stdio server's stderr is logged a line at a time,
// however its writes split it; a long line is clipped, the last line is
// logged without its newline, and a line past stderrLineMax ends the
// logging.
func TestStderrLines(t *testing.T) {
	var out bytes.Buffer
	w := &stderrLines{log: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
			return slog.Attr{}
		}
		return a
	}}))}
	for _, chunk := range []string{"one\r\ntw", "o\n", "\nthree", "\n" + strings.Repeat("x", 2500) + "\nlast"} {
		w.Write([]byte(chunk))
	}
	w.flush()
	want := []string{"line=one", "line=two", `line=""`, "line=three", "line=" + strings.Repeat("x", 2000) + "…", "line=last"}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
	out.Reset()
	w.Write([]byte(strings.Repeat("y", stderrLineMax+1)))
	w.Write([]byte("\nafter\n"))
	w.flush()
	if out.Len() != 0 {
		t.Fatalf("logged after a line past the limit: %q", out.String())
	}
}
