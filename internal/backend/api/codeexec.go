package api

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// maxImagesPerAnswer bounds the images of one answer that are returned;
// their bytes are within the turn's byte budget like every other byte of
// the answer (see withBudget).
const maxImagesPerAnswer = 16

// Bounds on what an answer's result carries beside its text, which is
// paged (the text has the code and output whole): the code and the
// output of each run in _meta.codeExecution, and the thought summaries.
const (
	maxMetaCodeBytes = 64 << 10
	maxThoughtBytes  = 256 << 10
)

// imageTypes are the types of the inline parts returned as image
// content: the raster formats Gemini's models and the sandbox's plotting
// make. Others (SVG, which a client may render with its script; anything
// else) are left out, said so in the text.
var imageTypes = []string{"image/png", "image/jpeg", "image/webp", "image/gif", "image/heic", "image/heif"}

// langRE matches the name of a language as a fence's info string holds it.
var langRE = regexp.MustCompile(`^[a-z0-9_+#.-]{1,32}$`)

// extras gathers what an answer holds besides its prose and function
// calls: the code the model ran in the API's sandbox and its results
// (also written into the answer's text, in their place among the prose),
// the images the code made, and the model's thought summaries, which are
// kept apart from the text.
type extras struct {
	runs     []backend.CodeRun
	images   []backend.Image
	thoughts strings.Builder
}

// thought keeps the text of a thought part.
func (x *extras) thought(text string) {
	if text == "" || x.thoughts.Len() > maxThoughtBytes {
		return
	}
	if x.thoughts.Len() > 0 && !strings.HasSuffix(x.thoughts.String(), "\n") {
		x.thoughts.WriteString("\n")
	}
	x.thoughts.WriteString(text)
}

// code renders an executableCode or codeExecutionResult part into text and
// keeps it in runs: the code as a fenced block in its language, the result
// as its outcome, then its output as a fenced block.
func (x *extras) code(p *genai.Part, text *strings.Builder) {
	if ec := p.ExecutableCode; ec != nil {
		lang := strings.ToLower(string(ec.Language))
		if lang == "" || lang == "language_unspecified" {
			lang = "python"
		}
		if !langRE.MatchString(lang) {
			// Not a language's name: it would end the fence's line.
			lang = "text"
		}
		x.runs = append(x.runs, backend.CodeRun{Language: lang, Code: clipMeta(ec.Code)})
		paragraph(text)
		writeFenced(text, lang, ec.Code)
		return
	}
	r := p.CodeExecutionResult
	outcome := apiWords(string(r.Outcome), 64)
	if outcome == "" {
		outcome = string(genai.OutcomeUnspecified)
	}
	if n := len(x.runs); n > 0 && x.runs[n-1].Outcome == "" {
		x.runs[n-1].Outcome, x.runs[n-1].Output = outcome, clipMeta(r.Output)
	} else {
		// A result with no code before it: kept all the same.
		x.runs = append(x.runs, backend.CodeRun{Language: "python", Outcome: outcome, Output: clipMeta(r.Output)})
	}
	paragraph(text)
	fmt.Fprintf(text, "Code execution: %s", outcomeWords(outcome))
	if r.Output == "" {
		text.WriteString(" (no output)\n\n")
		return
	}
	text.WriteString("\n")
	writeFenced(text, "", r.Output)
}

// inline keeps an inline data part of the answer: an image (up to
// maxImagesPerAnswer) is returned as an image, with a line in the text in
// its place; anything else is left out, and said so.
func (x *extras) inline(b *genai.Blob, text *strings.Builder) {
	mime := strings.ToLower(strings.TrimSpace(b.MIMEType))
	if !slices.Contains(imageTypes, mime) {
		paragraph(text)
		fmt.Fprintf(text, "[gemini-mcp-server: output of type %q (%d bytes) was left out]\n\n", msg.Clip(b.MIMEType, 100), len(b.Data))
		return
	}
	if len(x.images) == maxImagesPerAnswer {
		paragraph(text)
		fmt.Fprintf(text, "[gemini-mcp-server: an image (%s, %d bytes) was left out: over %d images in one answer]\n\n",
			mime, len(b.Data), maxImagesPerAnswer)
		return
	}
	x.images = append(x.images, backend.Image{MIMEType: mime, Data: b.Data})
	paragraph(text)
	fmt.Fprintf(text, "[image %d: %s, %d bytes, returned as image content]\n\n", len(x.images), mime, len(b.Data))
}

// outcomeWords says a code execution outcome in words: ok, failed,
// deadline exceeded; an outcome the SDK does not know is said as sent.
func outcomeWords(outcome string) string {
	switch genai.Outcome(outcome) {
	case genai.OutcomeOK:
		return "ok"
	case genai.OutcomeFailed:
		return "failed"
	case genai.OutcomeDeadlineExceeded:
		return "deadline exceeded (the code ran out of time in the sandbox)"
	}
	return "unknown (" + outcome + ")"
}

// paragraph ends the text so far with a blank line, so that a block that
// follows stands apart from the prose.
func paragraph(text *strings.Builder) {
	s := text.String()
	switch {
	case s == "":
	case strings.HasSuffix(s, "\n\n"):
	case strings.HasSuffix(s, "\n"):
		text.WriteString("\n")
	default:
		text.WriteString("\n\n")
	}
}

// writeFenced writes body as a fenced block in lang, with a fence longer
// than any run of backticks in body, and a blank line after it.
func writeFenced(text *strings.Builder, lang, body string) {
	n, run := 3, 0
	for _, r := range body {
		if r != '`' {
			run = 0
			continue
		}
		if run++; run >= n {
			n = run + 1
		}
	}
	fence := strings.Repeat("`", n)
	text.WriteString(fence + lang + "\n" + body)
	if !strings.HasSuffix(body, "\n") {
		text.WriteString("\n")
	}
	text.WriteString(fence + "\n\n")
}

// clipMeta bounds a run's code or output in _meta.codeExecution.
func clipMeta(s string) string {
	if len(s) <= maxMetaCodeBytes {
		return s
	}
	return msg.Clip(s, maxMetaCodeBytes) + fmt.Sprintf(" [gemini-mcp-server: %d bytes; the answer's text has it whole]", len(s))
}

// thoughtsText is the thought summaries, cut at maxThoughtBytes.
func (x *extras) thoughtsText() string {
	s := x.thoughts.String()
	if len(s) <= maxThoughtBytes {
		return s
	}
	return msg.Clip(s, maxThoughtBytes) + fmt.Sprintf("\n[gemini-mcp-server: the thoughts were cut at %d bytes, this server's cap]", maxThoughtBytes)
}
