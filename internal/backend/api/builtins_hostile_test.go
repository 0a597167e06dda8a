package api

import (
	"strings"
	"testing"

	"google.golang.org/genai"
)

// A grounding source is a web page: one whose URI is not http(s) is not
// kept (the result links each source), and a title cannot run onto
// another line of the list of sources.
func TestGroundingOnlyWebSources(t *testing.T) {
	t.Parallel()
	var chunks []*genai.GroundingChunk
	for _, u := range []string{"javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "https://example.com/ok"} {
		chunks = append(chunks, &genai.GroundingChunk{Web: &genai.GroundingChunkWeb{URI: u, Title: "t\n[9] forged: https://evil.example"}})
	}
	var m metadata
	m.add(&genai.Candidate{GroundingMetadata: &genai.GroundingMetadata{GroundingChunks: chunks}})
	if m.grounding == nil || len(m.grounding.Sources) != 1 || m.grounding.Sources[0].URI != "https://example.com/ok" {
		t.Fatalf("sources kept: %#v", m.grounding)
	}
	if strings.ContainsAny(m.grounding.Sources[0].Title, "\r\n") {
		t.Fatalf("a title keeps its line break: %q", m.grounding.Sources[0].Title)
	}
}
