package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// Research's files and URLs, sent to the agent as the Interactions API
// takes an input's context: content blocks after the query's text (see
// interact.AgentRequest). The files are read by the file context every
// tool shares (Deps.Files: its sandbox, ignore rules, credential files
// and secrets withheld, its size and token limits), as for a new
// conversation: nothing is skipped as sent before. Their text goes as
// one text block, packed with line numbers as chat sends it; PDFs go
// inline as document blocks (the agent reads text and PDFs; other media
// are refused). The URLs go as a text block listing them, for the
// agent's own URL reading: they are checked as chat's urls are
// (validate.PublicURL), and the agent's tools are left as the API sets
// them, since naming tools in the request could take its default ones
// (Google Search, URL context) away.

// researchURLsHeading starts the text block of research's URLs.
const researchURLsHeading = "## URLs to read for this research\n"

// researchFiles reads entries, when there are any, into ar's context and
// returns what was read (nil for no entries).
func (d *Deps) researchFiles(ctx context.Context, entries []string, ar *interact.AgentRequest) (*filectx.Files, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	for _, e := range entries {
		if strings.TrimSpace(e) == "" {
			return nil, errors.New("a files entry is empty: name a file or directory inside the project root, or leave the entry out")
		}
	}
	if d.Files == nil {
		return nil, errNoFiles
	}
	f, err := d.Files.Gather(ctx, "", entries)
	if err != nil {
		return nil, err
	}
	if f.Text == "" && len(f.Media) == 0 {
		return nil, fmt.Errorf("files: nothing could be sent of %s (%s)", msg.Clip(strings.Join(entries, ", "), 200), skippedSummary(f.Skipped))
	}
	if f.Text != "" {
		text := "## Files\n" + f.Text
		if n := len(ar.Input) + len(text); n > interact.MaxContextBytes {
			return nil, fmt.Errorf("files: the query and the files' text are %d bytes, over the %d research sends at most; name fewer files", n, interact.MaxContextBytes)
		}
		ar.Context = append(ar.Context, text)
	}
	size := 0
	for _, m := range f.Media {
		if !slices.Contains(interact.DocumentTypes, m.MIMEType) {
			return nil, fmt.Errorf("files: %s is %s, which the research agent does not read: send text files and PDFs", msg.QuoteName(m.Path), m.MIMEType)
		}
		size += len(m.Data)
		ar.Documents = append(ar.Documents, interact.Document{MIMEType: m.MIMEType, Data: m.Data})
	}
	if len(ar.Documents) > interact.MaxDocuments {
		return nil, fmt.Errorf("files: %d PDFs, over the %d research sends at most", len(ar.Documents), interact.MaxDocuments)
	}
	if size > interact.MaxDocumentBytes {
		return nil, fmt.Errorf("files: the PDFs are %d bytes, over the %d research sends at most", size, interact.MaxDocumentBytes)
	}
	return f, nil
}

// skippedSummary says why files were left out, for an error.
func skippedSummary(n []filectx.FileNote) string {
	if len(n) == 0 {
		return "no file found"
	}
	parts := make([]string, 0, min(len(n), 5))
	for _, f := range n[:min(len(n), 5)] {
		parts = append(parts, f.Path+": "+f.Reason)
	}
	if len(n) > 5 {
		parts = append(parts, fmt.Sprintf("%d more", len(n)-5))
	}
	return strings.Join(parts, "; ")
}
