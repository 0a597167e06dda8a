package filesearch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// Remote is what the Indexer needs of the API's File Search stores. API
// is the one over the genai SDK; tests may bring their own.
type Remote interface {
	// CreateStore creates a store and returns its name
	// ("fileSearchStores/…").
	CreateStore(ctx context.Context, displayName string) (string, error)
	// StoreExists says whether the store is still there, and how many
	// documents it holds (active, pending or failed).
	StoreExists(ctx context.Context, name string) (ok bool, docs int64, err error)
	// Documents lists the store's documents.
	Documents(ctx context.Context, store string) ([]DocInfo, error)
	// DeleteStore deletes the store with its documents; a store already
	// gone is no error.
	DeleteStore(ctx context.Context, name string) error
	// Upload makes a document of data in the store, waits until it is
	// indexed, and returns the document's name. An error wrapping
	// ErrStoreGone says the store is not there.
	Upload(ctx context.Context, store string, doc Doc, data []byte) (string, error)
	// DeleteDocument deletes a document; one already gone is no error.
	DeleteDocument(ctx context.Context, name string) error
}

// Doc describes a document to upload.
type Doc struct {
	Path string // relative to the project root, slash-separated: its display name
	Hash string // hex sha256 of the file's content
}

// DocInfo is a document of a store as Documents lists it.
type DocInfo struct {
	Name string
	Path string // its "path" custom metadata, "" when it has none
}

// ErrStoreGone is wrapped by the errors of calls on a store that is not
// there (deleted behind the server's back, or expired).
var ErrStoreGone = errors.New("the File Search store is gone")

// API is the Remote over the genai SDK's FileSearchStores. The client is
// the API backend's (its HTTP client and base URL), so that a test points
// it at the fake API as it does for generateContent.
type API struct {
	client *genai.Client
	// Poll is the first wait between two polls of an upload's operation
	// (doubling up to PollMax), and PollLimit bounds the wait for one
	// operation in all. Zero values mean 500ms, 5s and 5 minutes.
	Poll, PollMax, PollLimit time.Duration
}

// NewAPI returns the Remote over client.
func NewAPI(client *genai.Client) *API { return &API{client: client} }

// CreateStore implements Remote.
func (a *API) CreateStore(ctx context.Context, displayName string) (string, error) {
	st, err := a.client.FileSearchStores.Create(ctx, &genai.CreateFileSearchStoreConfig{DisplayName: displayName})
	if err != nil {
		return "", apiError("creating a File Search store", err)
	}
	if id, ok := strings.CutPrefix(st.Name, "fileSearchStores/"); !ok || !isID(id) {
		return "", fmt.Errorf("creating a File Search store: the Gemini API answered a store named %q, not fileSearchStores/<id>", msg.Clip(st.Name, 200))
	}
	return st.Name, nil
}

// StoreExists implements Remote.
func (a *API) StoreExists(ctx context.Context, name string) (bool, int64, error) {
	st, err := a.client.FileSearchStores.Get(ctx, name, nil)
	if err == nil {
		return true, st.ActiveDocumentsCount + st.PendingDocumentsCount + st.FailedDocumentsCount, nil
	}
	if notFound(err) {
		return false, 0, nil
	}
	return false, 0, apiError("getting the File Search store "+name, err)
}

// maxListed bounds the documents Documents lists.
const maxListed = 200_000

// Documents implements Remote.
func (a *API) Documents(ctx context.Context, store string) ([]DocInfo, error) {
	var out []DocInfo
	for d, err := range a.client.FileSearchStores.Documents.All(ctx, store) {
		if err != nil {
			return nil, apiError("listing the documents of "+store, err)
		}
		if len(out) == maxListed {
			return nil, fmt.Errorf("listing the documents of %s: more than %d", store, maxListed)
		}
		di := DocInfo{Name: d.Name}
		for _, m := range d.CustomMetadata {
			if m != nil && m.Key == "path" {
				di.Path = m.StringValue
			}
		}
		out = append(out, di)
	}
	return out, nil
}

// DeleteStore implements Remote.
func (a *API) DeleteStore(ctx context.Context, name string) error {
	force := true
	err := a.client.FileSearchStores.Delete(ctx, name, &genai.DeleteFileSearchStoreConfig{Force: &force})
	if err != nil && !notFound(err) {
		return apiError("deleting the File Search store "+name, err)
	}
	return nil
}

// DeleteDocument implements Remote.
func (a *API) DeleteDocument(ctx context.Context, name string) error {
	force := true
	err := a.client.FileSearchStores.Documents.Delete(ctx, name, &genai.DeleteDocumentConfig{Force: &force})
	if err != nil && !notFound(err) {
		return apiError("deleting the document "+name, err)
	}
	return nil
}

// Upload implements Remote: the file goes as text/plain (its secrets
// already withheld), named by its path (its end, past 512 characters),
// with its path and hash as custom metadata.
func (a *API) Upload(ctx context.Context, store string, doc Doc, data []byte) (string, error) {
	what := "uploading " + doc.Path + " to the File Search store"
	op, err := a.client.FileSearchStores.UploadToFileSearchStore(ctx, bytes.NewReader(data), store, &genai.UploadToFileSearchStoreConfig{
		MIMEType:    "text/plain",
		DisplayName: displayPath(doc.Path),
		CustomMetadata: []*genai.CustomMetadata{
			{Key: "path", StringValue: doc.Path},
			{Key: "sha256", StringValue: doc.Hash},
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		// The SDK flattens the upload's start error into text: ask
		// whether the store is still there to tell a gone store apart.
		if ok, _, gerr := a.StoreExists(ctx, store); gerr == nil && !ok {
			return "", fmt.Errorf("%s: %w", what, ErrStoreGone)
		}
		return "", apiError(what, err)
	}
	return a.wait(ctx, what, store, op)
}

// maxDisplayName is the most characters of a document's display name
// the API takes.
const maxDisplayName = 512

// displayPath is a document's display name for path: the path, or for a
// path longer than the API takes, "…" and its end (the "path" custom
// metadata keeps it whole, and citations use that).
func displayPath(path string) string {
	r := []rune(path)
	if len(r) <= maxDisplayName {
		return path
	}
	return "…" + string(r[len(r)-maxDisplayName+1:])
}

// wait polls an upload's operation until it is done, with backoff and a
// bound, and returns the document's name, which must be one of store's:
// every caller's stores are under the server's one key, and a document
// of another store kept in this store's manifest would be deleted by a
// later index of this one.
func (a *API) wait(ctx context.Context, what, store string, op *genai.UploadToFileSearchStoreOperation) (string, error) {
	poll, pollMax, limit := a.Poll, a.PollMax, a.PollLimit
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	if pollMax <= 0 {
		pollMax = 5 * time.Second
	}
	if limit <= 0 {
		limit = 5 * time.Minute
	}
	deadline := time.Now().Add(limit)
	for !op.Done {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s: the Gemini API had not indexed it after %v (operation %s)", what, limit, apiText(op.Name))
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", context.Cause(ctx)
		case <-t.C:
		}
		poll = min(2*poll, pollMax)
		next, err := a.client.Operations.GetUploadToFileSearchStoreOperation(ctx, op, nil)
		if err != nil {
			return "", apiError(what+": polling its operation", err)
		}
		op = next
	}
	if op.Error != nil {
		return "", fmt.Errorf("%s: the Gemini API could not index it: %s", what, apiText(fmt.Sprint(op.Error["message"])))
	}
	if op.Response == nil || op.Response.DocumentName == "" {
		return "", fmt.Errorf("%s: the Gemini API's operation %s ended without a document name", what, apiText(op.Name))
	}
	doc := op.Response.DocumentName
	if !ofStore(store, doc) {
		return "", fmt.Errorf("%s: the Gemini API's operation %s named a document not of the store %s: %q", what, apiText(op.Name), store, msg.Clip(doc, 200))
	}
	return doc, nil
}

// ofStore says whether doc names a document of store.
func ofStore(store, doc string) bool {
	rest, ok := strings.CutPrefix(doc, store+"/documents/")
	return ok && isID(rest)
}

// isID says whether s is a resource's id as the API makes them (its
// reference: lowercase letters, digits and dashes), tolerant of case
// and '_': nothing that would change a URL's path, as ".." or "/" would.
func isID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// maxAPIText bounds the API's words quoted in an error.
const maxAPIText = 1024

// apiText is the API's words as an error may quote them: one line of
// printable text, at most maxAPIText bytes.
func apiText(s string) string { return msg.Words(s, maxAPIText) }

// notFound says whether err is the API's 404.
func notFound(err error) bool {
	var ae genai.APIError
	if errors.As(err, &ae) {
		return ae.Code == http.StatusNotFound
	}
	var ap *genai.APIError
	return errors.As(err, &ap) && ap.Code == http.StatusNotFound
}

// apiError words an error of the API for the caller, wrapping
// ErrStoreGone for a 404.
func apiError(what string, err error) error {
	if notFound(err) {
		return fmt.Errorf("%s: %w (%w)", what, ErrStoreGone, err)
	}
	var ae genai.APIError
	if errors.As(err, &ae) {
		return fmt.Errorf("%s: the Gemini API answered HTTP %d %s: %s", what, ae.Code, apiText(ae.Status), apiText(ae.Message))
	}
	if t := err.Error(); t != apiText(t) {
		// The SDK's own words quote the API's (an upload's start).
		return &clipped{text: what + ": " + apiText(t), err: err}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// clipped is an error whose text is clipped and made one line, which
// still wraps the error it clips.
type clipped struct {
	text string
	err  error
}

func (c *clipped) Error() string { return c.text }
func (c *clipped) Unwrap() error { return c.err }
