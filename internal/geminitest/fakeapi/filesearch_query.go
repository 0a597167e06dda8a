package fakeapi

import (
	"encoding/json"
	"regexp"
	"strings"
)

// The fileSearch tool in streamGenerateContent.
//
// A request whose tools hold fileSearch (fileSearchStoreNames) is
// answered with the usual text, and its last event's candidate carries
// groundingMetadata whose groundingChunks cite documents of the stores
// named (those the Server holds), each as a retrievedContext: title (the
// document's displayName), text (a chunk of it: three lines), the
// fileSearchStore and the document's customMetadata, as the Gemini API
// sends them (it gives no line numbers, nor the document's name). With
// [[cite:TEXT]] in the prompt, every document holding TEXT is cited,
// its chunk starting at the line that holds TEXT; without, the first
// [FileSearchChunks] documents by name, from their first line. One
// groundingSupport cites them all for the whole text.

// FileSearchChunks is the number of documents an answer cites when the
// prompt does not say [[cite:TEXT]].
const FileSearchChunks = 2

var citeRE = regexp.MustCompile(`\[\[cite:([^\]]+)\]\]`)

// FileSearchStores are the fileSearchStoreNames of the request's
// fileSearch tools, in order; nil when it offers none.
func (r Request) FileSearchStores() []string {
	var b struct {
		Tools []struct {
			FileSearch *struct {
				Names []string `json:"fileSearchStoreNames"`
			} `json:"fileSearch"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(r.Body, &b)
	var out []string
	for _, t := range b.Tools {
		if t.FileSearch != nil {
			out = append(out, t.FileSearch.Names...)
		}
	}
	return out
}

// withFileSearch adds the fileSearch tool's grounding metadata to the
// last event of an answer (frame).
func (s *Server) withFileSearch(frame []byte, rec Request, answer string) []byte {
	stores := rec.FileSearchStores()
	if len(stores) == 0 {
		return frame
	}
	var m map[string]any
	if json.Unmarshal(frame, &m) != nil {
		return frame
	}
	cands, _ := m["candidates"].([]any)
	if len(cands) == 0 {
		return frame
	}
	c, _ := cands[0].(map[string]any)
	cite := ""
	if sm := citeRE.FindStringSubmatch(rec.LastUserText); sm != nil {
		cite = sm[1]
	}
	var chunks []any
	for _, store := range stores {
		for _, d := range s.Documents(store) {
			text := string(d.Data)
			at := 0
			if cite != "" {
				i := strings.Index(text, cite)
				if i < 0 {
					continue
				}
				at = strings.LastIndexByte(text[:i], '\n') + 1
			} else if len(chunks) >= FileSearchChunks {
				break
			}
			rc := map[string]any{"title": d.DisplayName, "text": firstLines(text[at:], 3), "fileSearchStore": store}
			if len(d.CustomMetadata) > 0 {
				rc["customMetadata"] = d.CustomMetadata
			}
			chunks = append(chunks, map[string]any{"retrievedContext": rc})
		}
	}
	gm, _ := c["groundingMetadata"].(map[string]any)
	if gm == nil {
		gm = map[string]any{}
	}
	if len(chunks) > 0 {
		indices := make([]int, len(chunks))
		for i := range indices {
			indices[i] = i
		}
		gm["groundingChunks"] = chunks
		gm["groundingSupports"] = []any{map[string]any{
			"segment":               map[string]any{"startIndex": 0, "endIndex": len(answer), "text": answer},
			"groundingChunkIndices": indices,
		}}
	}
	c["groundingMetadata"] = gm
	b, err := json.Marshal(m)
	if err != nil {
		return frame
	}
	return b
}

// firstLines is the first n lines of text, with their newlines.
func firstLines(text string, n int) string {
	end := 0
	for range n {
		i := strings.IndexByte(text[end:], '\n')
		if i < 0 {
			return text
		}
		end += i + 1
	}
	return text[:end]
}
