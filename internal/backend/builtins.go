package backend

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNoBuiltins is the cause of a backend's refusal of a turn that asks
// for a built-in tool of the Gemini API it does not have (see Refuse).
var ErrNoBuiltins = errors.New("the backend has none of the Gemini API's built-in tools")

// MaxURLs is the most URLs one turn may ask Gemini to read: the Gemini
// API's URL context tool reads at most 20 per request.
const MaxURLs = 20

// Builtins are the Gemini API's built-in tools and structured output a
// turn asks for. Only the API backend has them; the CLI backends refuse a
// turn that sets any (see Refuse).
type Builtins struct {
	// GoogleSearch grounds the answer in a Google Search the model runs
	// itself (the API's googleSearch tool).
	GoogleSearch bool
	// URLs are public web pages the model reads itself (the API's
	// urlContext tool); they are checked before (see
	// validate.PublicURL) and never fetched by this server.
	URLs []string
	// ResponseSchema, when set, is a JSON Schema the answer must be JSON
	// of (the API's responseJsonSchema, with responseMimeType
	// application/json).
	ResponseSchema json.RawMessage
	// CodeExecution lets the model write and run Python in the API's
	// sandbox (the API's codeExecution tool).
	CodeExecution bool
	// FileSearchStores are File Search stores (package filesearch) the
	// model retrieves from (the API's fileSearch tool).
	FileSearchStores []string
	// Image asks an image model for images beside its text (the API's
	// responseModalities TEXT and IMAGE); nil for a text answer. The
	// images come back in Answer.Images.
	Image *ImageRequest
}

// ImageRequest is what a turn asks of the images an image model makes.
type ImageRequest struct {
	// AspectRatio is the images' aspect ratio ("1:1", "16:9"…), "" for
	// the model's default.
	AspectRatio string
	// Size is the images' size ("1K", "2K", "4K", on the models that
	// take one), "" for the model's default.
	Size string
}

// Any says whether b asks for anything.
func (b Builtins) Any() bool {
	return b.GoogleSearch || len(b.URLs) > 0 || len(b.ResponseSchema) > 0 || b.CodeExecution || b.Image != nil || len(b.FileSearchStores) > 0
}

// Refuse is the error of a backend named name (as --backend spells it)
// that has none of the Gemini API's built-in tools, for a turn that asks
// for one; nil when it asks for none.
func (b Builtins) Refuse(name string) error {
	var what, why string
	switch {
	case b.Image != nil:
		what, why = "image", "the Gemini CLI answers in text only: it offers none of Gemini's image models"
	case b.GoogleSearch:
		what, why = "google_search", "the Gemini CLI has no per-request switch for Grounding with Google Search "+
			"(its model may use its own google_web_search tool by itself when the prompt asks for a search)"
	case len(b.URLs) > 0:
		what, why = "urls", "the Gemini CLI has no per-request URL context "+
			"(its model may use its own web_fetch tool by itself when the prompt names the URLs)"
	case len(b.ResponseSchema) > 0:
		what, why = "response_schema", "the Gemini CLI takes no response schema per request"
	case b.CodeExecution:
		what, why = "code_execution", "the Gemini CLI has no per-request switch for the API's code execution sandbox "+
			"(its model may run code with its own shell tool, on this machine, when its settings allow it)"
	case len(b.FileSearchStores) > 0:
		what, why = "file_search", "File Search stores are the Gemini API's"
	default:
		return nil
	}
	return &Error{Kind: KindInput, Err: ErrNoBuiltins, Reason: fmt.Sprintf("%s: the %s backend cannot do this: %s. "+
		"The server's operator can run it with --backend api, or leave %s out", what, name, why, what)}
}

// Grounding is the grounding metadata of an answer grounded in Google
// Search, as the tools report it in _meta.grounding.
type Grounding struct {
	// Queries are the web searches the model ran (webSearchQueries).
	Queries []string `json:"webSearchQueries,omitempty"`
	// Sources are the web pages the answer is grounded in
	// (groundingChunks[].web), numbered from 1 in this order.
	Sources []Source `json:"sources,omitempty"`
	// RenderedContent is the search suggestions' HTML
	// (searchEntryPoint.renderedContent), which Google's terms require
	// to be shown to the end user with a grounded answer.
	RenderedContent string `json:"renderedContent,omitempty"`
	// Files are the chunks of File Search documents the answer is
	// grounded in (groundingChunks[].retrievedContext), in their order.
	Files []FileSource `json:"files,omitempty"`
}

// FileSource is one chunk of a File Search document an answer cites. The
// Gemini API gives no line numbers: see filesearch.Cite, which finds
// Text in the file.
type FileSource struct {
	Store string `json:"fileSearchStore,omitempty"`
	// Path is the document's "path" custom metadata, else its title
	// (package filesearch names documents by their path).
	Path string `json:"path"`
	Text string `json:"text,omitempty"`
}

// Source is one web page a grounded answer cites.
type Source struct {
	Title string `json:"title,omitempty"`
	URI   string `json:"uri"`
}

// URLStatus is how the API's retrieval of one URL went: its
// urlRetrievalStatus, e.g. URL_RETRIEVAL_STATUS_SUCCESS.
type URLStatus struct {
	URL    string `json:"url"`
	Status string `json:"status"`
}

// CodeRun is one piece of code the model ran in the Gemini API's sandbox
// and what came of it, as the tools report it in _meta.codeExecution.
type CodeRun struct {
	Language string `json:"language"`
	Code     string `json:"code"`
	// Outcome is the API's outcome (OUTCOME_OK, OUTCOME_FAILED,
	// OUTCOME_DEADLINE_EXCEEDED), "" when no result came for the code.
	Outcome string `json:"outcome,omitempty"`
	Output  string `json:"output,omitempty"`
}

// Image is an image the model made: the output of its code, or an image
// model's picture (Turn.Image).
type Image struct {
	MIMEType string
	Data     []byte
}
