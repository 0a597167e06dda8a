package fakeapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// interactionInput is what an interaction's input carried: a string, or
// content blocks (one object or a list). Input is the first text
// block's text, the query, whose directives the Server obeys; Context
// the later text blocks, and Documents the document blocks ("MIME,
// N bytes, sha256 HEX"): an agent's report echoes both ([ContextEcho]).
type interactionInput struct {
	Input     string
	Context   []string
	Documents []string
}

// DocumentTypes are the document MIME types the Server takes, the SDK's
// DocumentContentMimeType.
var DocumentTypes = []string{"application/pdf", "text/csv"}

// parseInput reads an interaction's input, checking each content block's
// shape as the SDK's interactions.Content has it; a non-empty string is
// what is wrong.
func parseInput(raw json.RawMessage) (interactionInput, string) {
	var in interactionInput
	if json.Unmarshal(raw, &in.Input) == nil {
		return in, ""
	}
	type block struct {
		Type     string  `json:"type"`
		Text     *string `json:"text"`
		Data     *string `json:"data"`
		URI      *string `json:"uri"`
		MIMEType string  `json:"mime_type"`
	}
	var list []block
	var one block
	if json.Unmarshal(raw, &one) == nil {
		list = []block{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return in, "fakeapi: input is neither a string nor content blocks"
	}
	first := true
	for i, b := range list {
		switch b.Type {
		case "text":
			if b.Text == nil {
				return in, fmt.Sprintf("fakeapi: input[%d]: a text block needs text", i)
			}
			if first {
				in.Input, first = *b.Text, false
			} else {
				in.Context = append(in.Context, *b.Text)
			}
		case "document":
			if !slices.Contains(DocumentTypes, b.MIMEType) {
				return in, fmt.Sprintf("fakeapi: input[%d]: a document's mime_type must be one of %v, not %q", i, DocumentTypes, b.MIMEType)
			}
			if (b.Data == nil) == (b.URI == nil) {
				return in, fmt.Sprintf("fakeapi: input[%d]: a document has data or a uri", i)
			}
			if b.Data == nil {
				in.Documents = append(in.Documents, b.MIMEType+", uri "+*b.URI)
				continue
			}
			data, err := base64.StdEncoding.DecodeString(*b.Data)
			if err != nil {
				return in, fmt.Sprintf("fakeapi: input[%d]: a document's data is not base64: %v", i, err)
			}
			sum := sha256.Sum256(data)
			in.Documents = append(in.Documents, fmt.Sprintf("%s, %d bytes, sha256 %x", b.MIMEType, len(data), sum))
		default:
			return in, fmt.Sprintf("fakeapi: input[%d]: content of type %q is not taken here", i, b.Type)
		}
	}
	return in, ""
}

// ContextEcho is what an agent's report adds after [ReportText] for the
// context its input carried beside the query: each text block, then
// each document as parseInput describes it; "" for none.
func ContextEcho(context, documents []string) string {
	if len(context) == 0 && len(documents) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nContext received:")
	for _, c := range context {
		b.WriteString("\n[text]\n" + c)
	}
	for _, d := range documents {
		b.WriteString("\n[document] " + d)
	}
	return b.String()
}
