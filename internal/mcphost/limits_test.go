package mcphost

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestTruncateOutput(t *testing.T) {
	if got := truncateOutput("short", 10); got != "short" {
		t.Errorf("a short text changed: %q", got)
	}
	text := strings.Repeat("a", 20) + strings.Repeat("é", 30) + strings.Repeat("z", 50)
	want := "Output too large. Showing first 2 and last 8 characters.\naa\n\n... [90 characters omitted] ...\n\nzzzzzzzz"
	if got := truncateOutput(text, 10); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 8000: "8,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q", n, got)
		}
	}
}

func TestLimitResult(t *testing.T) {
	img := &mcp.ImageContent{MIMEType: "image/png", Data: []byte("png")}
	res := &mcp.CallToolResult{Content: []mcp.Content{img, &mcp.TextContent{Text: strings.Repeat("a", MaxResultChars)}, &mcp.TextContent{Text: "tail"}},
		StructuredContent: map[string]any{"big": strings.Repeat("b", MaxResultChars)}}
	limitResult(res)
	if len(res.Content) != 2 || res.Content[0] != img || res.StructuredContent != nil {
		t.Fatalf("%+v", res)
	}
	text := res.Content[1].(*mcp.TextContent).Text
	if !strings.HasPrefix(text, "Output too large. Showing first 8,000 and last 32,000 characters.\n") || !strings.HasSuffix(text, "\ntail") {
		t.Errorf("%.200q", text)
	}
	small := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: map[string]any{"n": 1}}
	limitResult(small)
	if small.Content[0].(*mcp.TextContent).Text != "ok" || small.StructuredContent == nil {
		t.Errorf("a small result changed: %+v", small)
	}
}

func TestLineLimitReader(t *testing.T) {
	var overflow atomic.Bool
	ok := strings.Repeat(strings.Repeat("x", 1<<20)+"\n", 20) // many lines, each under the cap
	if n, err := io.Copy(io.Discard, &lineLimitReader{r: strings.NewReader(ok), overflow: &overflow}); err != nil || n != int64(len(ok)) || overflow.Load() {
		t.Errorf("lines under the cap: %d %v", n, err)
	}
	long := strings.NewReader(strings.Repeat("x", MaxMessageBytes+1))
	if _, err := io.Copy(io.Discard, &lineLimitReader{r: long, overflow: &overflow}); !errors.Is(err, errTooLarge) || !overflow.Load() {
		t.Errorf("a line over the cap: %v", err)
	}
}

func TestGeminiSchemaBounds(t *testing.T) {
	defs := map[string]any{}
	for i := range 20 {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/L%d", i+1)}
		defs[fmt.Sprintf("L%d", i)] = map[string]any{"type": "object", "properties": map[string]any{"a": next, "b": next}}
	}
	defs["L20"] = map[string]any{"type": "string"}
	schema := map[string]any{"type": "object", "$defs": defs, "properties": map[string]any{"root": map[string]any{"$ref": "#/$defs/L0"}}}
	if _, err := GeminiSchema(schema); err == nil || !strings.Contains(err.Error(), "nodes") {
		t.Errorf("an exploding schema: %v", err)
	}
	wide := map[string]any{}
	for i := range 2000 {
		wide[fmt.Sprintf("property_%d", i)] = map[string]any{"type": "string", "description": strings.Repeat("d", 40)}
	}
	if _, err := GeminiSchema(map[string]any{"type": "object", "properties": wide}); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("a wide schema: %v", err)
	}
	lt := prepareTools([]*mcp.Tool{{Name: "boom", InputSchema: schema, Description: strings.Repeat("é", MaxDescriptionChars+1)}})
	if len(lt) != 1 || lt[0].refused == "" || lt[0].schema != nil || len([]rune(lt[0].description)) != MaxDescriptionChars+1 || !strings.HasSuffix(lt[0].description, "…") {
		t.Errorf("%+v", lt)
	}
}
