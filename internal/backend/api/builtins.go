package api

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// Bounds on the grounding and URL context metadata kept of one answer.
const (
	maxSources       = 64
	maxQueries       = 32
	maxSourceBytes   = 2048     // a source's title, and its URI
	maxChunkBytes    = 16 << 10 // a File Search chunk's text
	maxRenderedBytes = 64 << 10 // the search suggestions' HTML
	maxURLStatuses   = 2 * backend.MaxURLs
)

// builtinTools are the Gemini API's own tools a turn asks for: Google
// Search, URL context, code execution. Each is a Tool entry of its own, as the API's
// examples send them.
func builtinTools(b backend.Builtins) []*genai.Tool {
	var tools []*genai.Tool
	if b.GoogleSearch {
		tools = append(tools, &genai.Tool{GoogleSearch: &genai.GoogleSearch{}})
	}
	if len(b.URLs) > 0 {
		tools = append(tools, &genai.Tool{URLContext: &genai.URLContext{}})
	}
	if b.CodeExecution {
		tools = append(tools, &genai.Tool{CodeExecution: &genai.ToolCodeExecution{}})
	}
	if len(b.FileSearchStores) > 0 {
		tools = append(tools, &genai.Tool{FileSearch: &genai.FileSearch{FileSearchStoreNames: b.FileSearchStores}})
	}
	return tools
}

// withURLs is the prompt with the URLs Gemini is to read: the URL context
// tool reads the URLs the prompt's text names.
func withURLs(prompt string, urls []string) string {
	if len(urls) == 0 {
		return prompt
	}
	return prompt + "\n\nURLs:\n" + strings.Join(urls, "\n")
}

// metadata gathers the grounding and URL context metadata of an answer's
// stream, each event's added to the last's, bounded.
type metadata struct {
	grounding *backend.Grounding
	urls      []backend.URLStatus
	dropped   bool // the rendered suggestions were over maxRenderedBytes
	// stores are the File Search stores the turn offered: a chunk the
	// API says comes from another (another caller's, under the server's
	// one key) is dropped, its path and text kept from the answer.
	stores []string
}

// webURL says whether s is an http(s) URL with a host: a web source,
// which the result links. Another (a script, a local file, a data: URL)
// is not one a client should be handed to open.
func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Opaque == ""
}

func (m *metadata) add(c *genai.Candidate) {
	if gm := c.GroundingMetadata; gm != nil {
		if m.grounding == nil {
			m.grounding = &backend.Grounding{}
		}
		g := m.grounding
		for _, q := range gm.WebSearchQueries {
			if q = msg.Clip(q, maxSourceBytes); q != "" && len(g.Queries) < maxQueries && !slices.Contains(g.Queries, q) {
				g.Queries = append(g.Queries, q)
			}
		}
		for _, ch := range gm.GroundingChunks {
			if ch != nil && ch.RetrievedContext != nil {
				if st := ch.RetrievedContext.FileSearchStore; st == "" || slices.Contains(m.stores, st) {
					addFile(g, ch.RetrievedContext)
				}
				continue
			}
			if ch == nil || ch.Web == nil || len(ch.Web.URI) > maxSourceBytes || !webURL(ch.Web.URI) || len(g.Sources) == maxSources {
				continue
			}
			if slices.ContainsFunc(g.Sources, func(s backend.Source) bool { return s.URI == ch.Web.URI }) {
				continue
			}
			title := strings.Join(strings.Fields(msg.Clip(ch.Web.Title, maxSourceBytes)), " ")
			g.Sources = append(g.Sources, backend.Source{Title: title, URI: ch.Web.URI})
		}
		if ep := gm.SearchEntryPoint; ep != nil && ep.RenderedContent != "" {
			if len(ep.RenderedContent) > maxRenderedBytes {
				m.dropped = true
			} else {
				g.RenderedContent = ep.RenderedContent
			}
		}
	}
	if um := c.URLContextMetadata; um != nil {
		for _, u := range um.URLMetadata {
			if u == nil || u.RetrievedURL == "" || len(m.urls) == maxURLStatuses {
				continue
			}
			st := backend.URLStatus{URL: msg.Clip(u.RetrievedURL, maxSourceBytes), Status: apiWords(string(u.URLRetrievalStatus), 64)}
			if st.Status == "" {
				st.Status = string(genai.URLRetrievalStatusUnspecified)
			}
			if i := slices.IndexFunc(m.urls, func(s backend.URLStatus) bool { return s.URL == st.URL }); i >= 0 {
				m.urls[i] = st
				continue
			}
			m.urls = append(m.urls, st)
		}
	}
}

// addFile adds a File Search chunk to g, bounded.
func addFile(g *backend.Grounding, rc *genai.GroundingChunkRetrievedContext) {
	path := rc.Title
	for _, m := range rc.CustomMetadata {
		if m != nil && m.Key == "path" && m.StringValue != "" {
			path = m.StringValue
		}
	}
	if path == "" || len(path) > maxSourceBytes || len(g.Files) == maxSources {
		return
	}
	g.Files = append(g.Files, backend.FileSource{Store: msg.Clip(rc.FileSearchStore, maxSourceBytes), Path: path,
		Text: msg.Clip(rc.Text, maxChunkBytes)})
}

// builtinError adds to a refusal of the API (400) what the turn's
// built-in tools or schema may have to do with it.
func builtinError(err error, b backend.Builtins, model string) error {
	var be *backend.Error
	if !b.Any() || !errors.As(err, &be) || be.Kind != backend.KindAPI || be.Status != 400 {
		return err
	}
	var asked []string
	if b.GoogleSearch {
		asked = append(asked, "google_search (Grounding with Google Search)")
	}
	if len(b.URLs) > 0 {
		asked = append(asked, "urls (URL context)")
	}
	if len(b.ResponseSchema) > 0 {
		asked = append(asked, "response_schema (structured output)")
	}
	if b.CodeExecution {
		asked = append(asked, "code_execution")
	}
	if len(b.FileSearchStores) > 0 {
		asked = append(asked, "file_search")
	}
	if len(asked) == 0 {
		return err // an image turn's refusal says what it says
	}
	e := *be
	e.Reason = fmt.Sprintf("%s. The call asked for %s, which model %q may not support, or not together: "+
		"try another model (e.g. %s), or leave it out", strings.TrimSuffix(be.Reason, "."), strings.Join(asked, " and "), model, DefaultModel)
	return &e
}

// GenAI returns the backend's SDK client (its credentials, HTTP client
// and base URL), for the File Search stores (filesearch.NewAPI).
func (b *Backend) GenAI() *genai.Client { return b.client }
