package filesearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
)

var docRE = regexp.MustCompile(`"documentName":\s*"([^"]*)"`)

// hostileOps puts a proxy before the fake API whose answers to an
// upload's operation name the document rewrite returns (given the one the
// fake named), and points the fixture's API client at it.
func hostileOps(t *testing.T, f *fixture, rewrite func(doc string) string) {
	t.Helper()
	hostileOpsBody(t, f, func(body []byte) []byte {
		return docRE.ReplaceAllFunc(body, func(m []byte) []byte {
			doc := string(docRE.FindSubmatch(m)[1])
			return []byte(`"documentName":` + strconv.Quote(rewrite(doc)))
		})
	})
}

// hostileOpsBody puts a proxy before the fake API whose answers to an
// upload's operation polls are rewrite's of the fake's, and points the
// fixture's API client at it.
func hostileOpsBody(t *testing.T, f *fixture, rewrite func(body []byte) []byte) {
	t.Helper()
	f.api = rewriteAPI(t, f, func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/operations/")
	}, rewrite)
	f.fake.SetPendingPolls(1) // so that the operation's answer comes from a poll
}

// rewriteAPI returns an API client through a proxy before the fake API
// whose answers to the requests match takes are rewrite's of the fake's.
func rewriteAPI(t *testing.T, f *fixture, match func(*http.Request) bool, rewrite func(body []byte) []byte) *API {
	t.Helper()
	return rewriteAnswers(t, f, match, func(_ *http.Response, body []byte) []byte { return rewrite(body) })
}

// rewriteAnswers is rewriteAPI whose rewrite may change the answer's
// status and headers too.
func rewriteAnswers(t *testing.T, f *fixture, match func(*http.Request) bool, rewrite func(r *http.Response, body []byte) []byte) *API {
	t.Helper()
	target, _ := url.Parse(f.fake.URL())
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if !match(r.Request) {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		body = rewrite(r, body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	proxy := httptest.NewServer(rp)
	t.Cleanup(proxy.Close)
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "test-key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: proxy.URL + "/"},
		HTTPClient:  proxy.Client(),
	})
	if err != nil {
		t.Fatal(err)
	}
	api := NewAPI(c)
	api.Poll, api.PollMax = f.api.Poll, f.api.PollMax
	return api
}

// Names from the API that would change the path of a later request (a
// store named "fileSearchStores/..", a document ".." of the store) are
// refused, not used.
func TestNamesThatWouldChangeAPath(t *testing.T) {
	f := newFixture(t)
	created := rewriteAPI(t, f, func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/fileSearchStores")
	}, func([]byte) []byte { return []byte(`{"name":"fileSearchStores/../models/x"}`) })
	if _, err := created.CreateStore(context.Background(), "p"); err == nil || !strings.Contains(err.Error(), "not fileSearchStores/<id>") {
		t.Fatalf("CreateStore answered a name with ..: %v", err)
	}
	hostileOps(t, f, func(doc string) string { return doc[:strings.LastIndex(doc, "/")+1] + ".." })
	name, err := f.api.CreateStore(context.Background(), "p")
	must(t, err)
	if _, err := f.api.Upload(context.Background(), name, Doc{Path: "a.go"}, []byte("x")); err == nil || !strings.Contains(err.Error(), "not of the store") {
		t.Fatalf("Upload answered a document ..: %v", err)
	}
}

// The API (one key for every caller) answers an upload with a document
// of another store, another caller's: the index refuses it, so that no
// manifest names it and no later index deletes it.
func TestUploadAnsweredWithAnotherStoresDocument(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bobRoot, aliceRoot := t.TempDir(), t.TempDir()
	write(t, bobRoot, "bob.go", "package bob\n")
	bob := f.index(f.indexer(nil, Options{}), bobRoot, "bob")
	var bobDoc string
	for _, d := range f.fake.Documents(bob.Store) {
		bobDoc = d.Name
	}
	if bobDoc == "" {
		t.Fatal("bob's store has no document")
	}
	hostileOps(t, f, func(string) string { return bobDoc })
	write(t, aliceRoot, "alice.go", "package alice\n")
	ix := f.indexer(nil, Options{})
	_, err := ix.Index(ctx, aliceRoot, "alice")
	if err == nil || !strings.Contains(err.Error(), "not of the store") {
		t.Fatalf("an upload answered with another store's document: %v; want it refused", err)
	}
	// Alice's file changes: an index that had kept bob's document as
	// alice.go's would delete it now.
	write(t, aliceRoot, "alice.go", "package alice // changed\n")
	_, _ = ix.Index(ctx, aliceRoot, "alice")
	if len(f.fake.Documents(bob.Store)) != 1 {
		t.Fatalf("bob's document was deleted by alice's index")
	}
}

// foreignList lists, with the store's own documents, those of another
// store, as a misrouted answer of the API would.
type foreignList struct {
	Remote
	other string
}

func (l *foreignList) Documents(ctx context.Context, store string) ([]DocInfo, error) {
	own, err := l.Remote.Documents(ctx, store)
	if err != nil {
		return nil, err
	}
	theirs, err := l.Remote.Documents(ctx, l.other)
	return append(own, theirs...), err
}

// The list of a store's documents, when the index deletes those its
// manifest does not name, holds another store's: they are not deleted.
func TestStrayDocumentsOfAnotherStoreAreNotDeleted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bobRoot, aliceRoot := t.TempDir(), t.TempDir()
	write(t, bobRoot, "bob.go", "package bob\n")
	bob := f.index(f.indexer(nil, Options{}), bobRoot, "bob")
	tree(t, aliceRoot, 3)
	alice := f.index(f.indexer(nil, Options{}), aliceRoot, "alice")
	// A document the manifest does not name, so that the next index
	// lists the store's documents.
	if _, err := f.api.Upload(ctx, alice.Store, Doc{Path: "stray.go", Hash: "00"}, []byte("x")); err != nil {
		t.Fatal(err)
	}
	rep := f.index(f.indexer(&foreignList{Remote: f.api, other: bob.Store}, Options{}), aliceRoot, "alice")
	if rep.Strays != 1 || len(f.fake.Documents(bob.Store)) != 1 {
		t.Fatalf("index %+v; bob's store has %d documents, want its one kept and alice's stray deleted", rep, len(f.fake.Documents(bob.Store)))
	}
}

// Two calls of one caller index one root at once, and a third of
// another caller: one store per caller, each file uploaded once to it.
func TestConcurrentIndexesOfOneRoot(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 20)
	ix := f.indexer(nil, Options{})
	var wg sync.WaitGroup
	reps := make([]*Report, 3)
	errs := make([]error, 3)
	for i, scope := range []string{"alice", "alice", "bob"} {
		wg.Go(func() { reps[i], errs[i] = ix.Index(context.Background(), root, scope) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if reps[0].Store != reps[1].Store || reps[0].Store == reps[2].Store || len(f.fake.Stores()) != 2 {
		t.Fatalf("stores %s %s %s, %d in all; want alice's one and bob's", reps[0].Store, reps[1].Store, reps[2].Store, len(f.fake.Stores()))
	}
	if up := reps[0].Uploaded + reps[1].Uploaded; up != 20 || len(f.docs(reps[0].Store)) != 20 || len(f.docs(reps[2].Store)) != 20 {
		t.Fatalf("alice's two indexes uploaded %d; want each file once", up)
	}
}

// stuckStore is a Remote on which deleting one store, the first it is
// asked to delete, always fails (a store of another key after the
// server's key changed, say).
type stuckStore struct {
	Remote
	stuck string
}

func (s *stuckStore) DeleteStore(ctx context.Context, name string) error {
	if s.stuck == "" {
		s.stuck = name
	}
	if name == s.stuck {
		return errors.New("deleting the File Search store " + name + ": the Gemini API answered HTTP 403 PERMISSION_DENIED")
	}
	return s.Remote.DeleteStore(ctx, name)
}

// A store the sweep cannot delete, every time, does not keep it from
// deleting the others unused for the TTL.
func TestSweepGoesPastAStoreItCannotDelete(t *testing.T) {
	f := newFixture(t)
	var roots []string
	for range 3 {
		root := t.TempDir()
		tree(t, root, 1)
		roots = append(roots, root)
	}
	ix := f.indexer(nil, Options{TTL: time.Hour})
	for _, root := range roots {
		f.index(ix, root, "alice")
		f.advance(time.Minute)
	}
	f.advance(2 * time.Hour)
	stuck := &stuckStore{Remote: f.api}
	n, err := f.indexer(stuck, Options{TTL: time.Hour}).Sweep(context.Background())
	if n != 2 || err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("Sweep: %d, %v; want the two others deleted and the one it could not named", n, err)
	}
	if st := f.fake.Stores(); len(st) != 1 || st[0].Name != stuck.stuck {
		t.Fatalf("stores after the sweep: %+v; want %s alone", st, stuck.stuck)
	}
}

// An upload's operation ends with an error of a megabyte and terminal
// escapes: the error says so in a bounded line of plain text.
func TestUploadOperationErrorIsBounded(t *testing.T) {
	f := newFixture(t)
	huge := strings.Repeat("x", 1<<20) + "\x1b[2J\n"
	hostileOpsBody(t, f, func(body []byte) []byte {
		if !bytes.Contains(body, []byte(`"done"`)) {
			return body
		}
		b, _ := json.Marshal(map[string]any{"name": "fileSearchStores/x/upload/operations/y", "done": true,
			"error": map[string]any{"code": 13, "message": huge}})
		return b
	})
	name, err := f.api.CreateStore(context.Background(), "p")
	must(t, err)
	_, err = f.api.Upload(context.Background(), name, Doc{Path: "a.go"}, []byte("x"))
	if err == nil || len(err.Error()) > 4096 || strings.ContainsAny(err.Error(), "\x1b\n") || !strings.Contains(err.Error(), "could not index it: xxx") {
		t.Fatalf("Upload whose operation failed with a megabyte: %d bytes of error: %.200q", len(err.Error()), err)
	}
}

// The API refuses an upload's start with a megabyte of message (which
// the SDK flattens into its error's text): the error is bounded.
func TestUploadStartErrorIsBounded(t *testing.T) {
	f := newFixture(t)
	api := rewriteAnswers(t, f, func(r *http.Request) bool {
		return strings.Contains(r.URL.Path, ":uploadToFileSearchStore")
	}, func(r *http.Response, _ []byte) []byte {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 400, "status": "INVALID_ARGUMENT",
			"message": strings.Repeat("y", 1<<20) + "\x1b[2J"}})
		r.StatusCode, r.Status = http.StatusBadRequest, "400 Bad Request"
		return b
	})
	name, err := api.CreateStore(context.Background(), "p")
	must(t, err)
	_, err = api.Upload(context.Background(), name, Doc{Path: "a.go"}, []byte("x"))
	if err == nil || len(err.Error()) > 4096 || strings.Contains(err.Error(), "\x1b") || !strings.Contains(err.Error(), "yyy") {
		t.Fatalf("Upload refused with a megabyte: %d bytes of error: %.300q", len(err.Error()), err)
	}
}

// slowCreate runs during before its CreateStore answers: another
// replica's index of the same root and caller.
type slowCreate struct {
	Remote
	during func()
}

func (s *slowCreate) CreateStore(ctx context.Context, name string) (string, error) {
	st, err := s.Remote.CreateStore(ctx, name)
	s.during()
	return st, err
}

// Two replicas (an Indexer each, so no lock in common) sharing the
// manifests index one root of one caller at once, the second making its
// store while the first makes its own: one store is kept, the other
// deleted rather than left at Google with no manifest naming it, which
// no sweep would ever delete.
func TestTwoReplicasMakeOneStore(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 4)
	other := f.indexer(nil, Options{})
	ix := f.indexer(&slowCreate{Remote: f.api, during: func() { f.index(other, root, "alice") }}, Options{})
	rep := f.index(ix, root, "alice")
	if st := f.fake.Stores(); len(st) != 1 || st[0].Name != rep.Store || len(f.docs(rep.Store)) != 4 {
		t.Fatalf("stores %+v after the two indexes (%+v); want one, with the 4 files", st, rep)
	}
	if again := f.index(f.indexer(nil, Options{}), root, "alice"); again.Store != rep.Store || again.Uploaded != 0 {
		t.Fatalf("an index after: %+v", again)
	}
}

// meetManifests holds the first two writes of a store until both have
// come: two replicas that each made a store and read the manifest
// before either wrote it.
type meetManifests struct {
	Manifests
	n    atomic.Int32
	both chan struct{}
}

func (m *meetManifests) meet(ctx context.Context) {
	switch m.n.Add(1) {
	case 1:
	case 2:
		close(m.both)
	default:
		return
	}
	select {
	case <-m.both:
	case <-ctx.Done():
	}
}

func (m *meetManifests) SetStore(ctx context.Context, key, store string, used time.Time) error {
	m.meet(ctx)
	return m.Manifests.SetStore(ctx, key, store, used)
}

func (m *meetManifests) ReplaceStore(ctx context.Context, key, old, store string, used time.Time) error {
	m.meet(ctx)
	return m.Manifests.ReplaceStore(ctx, key, old, store, used)
}

// Two replicas (an Indexer each) make a store for one root and caller
// at once, and both have read the manifest empty before either writes
// it: one store is recorded and used by both, the other deleted, rather
// than both written and one left at Google with no manifest naming it.
func TestTwoReplicasRacingMakeOneStore(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 4)
	m := &meetManifests{Manifests: f.man, both: make(chan struct{})}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a failure guard
	defer cancel()
	reps := make([]*Report, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { reps[i], errs[i] = New(f.api, m, Options{Now: f.clock}).Index(ctx, root, "alice") })
	}
	wg.Wait()
	must(t, errors.Join(errs...))
	rec, err := f.man.Get(ctx, Key(mustRoot(t, root), "alice"))
	must(t, err)
	if st := f.fake.Stores(); len(st) != 1 || st[0].Name != rec.Store || reps[0].Store != rec.Store || reps[1].Store != rec.Store {
		t.Fatalf("stores %+v; reports' stores %s and %s; the manifest names %s: want one store, the recorded one, used by both",
			st, reps[0].Store, reps[1].Store, rec.Store)
	}
}

func mustRoot(t *testing.T, root string) string {
	t.Helper()
	sb, err := filectx.NewSandbox(root, nil)
	must(t, err)
	return sb.Root()
}
