package api

import (
	"testing"

	"google.golang.org/genai"
)

// The API, on the server's one key for every caller, answers with a
// File Search chunk of a store the turn did not offer (another
// caller's): neither its path nor its text reaches the answer's
// grounding (_meta.grounding.files); a chunk naming no store is kept.
func TestFileSearchChunkOfAnotherStore(t *testing.T) {
	m := metadata{stores: []string{"fileSearchStores/alice"}}
	m.add(&genai.Candidate{GroundingMetadata: &genai.GroundingMetadata{GroundingChunks: []*genai.GroundingChunk{
		{RetrievedContext: &genai.GroundingChunkRetrievedContext{FileSearchStore: "fileSearchStores/bob", Title: "bob/plan.go", Text: "bob's secret plan"}},
		{RetrievedContext: &genai.GroundingChunkRetrievedContext{FileSearchStore: "fileSearchStores/alice", Title: "a.go", Text: "package a"}},
		{RetrievedContext: &genai.GroundingChunkRetrievedContext{Title: "b.go", Text: "package b"}},
	}}})
	g := m.grounding
	if g == nil || len(g.Files) != 2 || g.Files[0].Path != "a.go" || g.Files[1].Path != "b.go" {
		t.Fatalf("grounding files %+v; want a.go and b.go, not bob's", g)
	}
}
