package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// File Search stores.
//
// The Server answers the fileSearchStores API as the Gemini API does, in
// the wire protocol of the genai SDK's FileSearchStores and Documents:
//
//   - POST /v1beta/fileSearchStores with {"displayName"} creates a store
//     (a genai.FileSearchStore named "fileSearchStores/<id>");
//     GET /v1beta/fileSearchStores lists them (pageSize, pageToken);
//     GET and DELETE /v1beta/fileSearchStores/<id> get and delete one. A
//     store that holds documents is deleted only with ?force=true (400
//     otherwise); a store the Server does not hold is 404 NOT_FOUND.
//   - POST /upload/v1beta/fileSearchStores/<id>:uploadToFileSearchStore
//     with X-Goog-Upload-Protocol: resumable and X-Goog-Upload-Command:
//     start (the body {"displayName","mimeType","customMetadata"}; a
//     display name over 512 characters is 400 INVALID_ARGUMENT) starts
//     an upload, whose X-Goog-Upload-Url header is where its bytes go, as
//     for the Files API (files.go); the last chunk's answer (with
//     X-Goog-Upload-Status: final) is a long-running operation, named
//     "fileSearchStores/<id>/upload/operations/<op>".
//   - POST /v1beta/fileSearchStores/<id>:importFile with {"fileName"}
//     imports a file of the Files API, answering an operation named
//     "fileSearchStores/<id>/operations/<op>".
//   - GET /v1beta/<operation name> is operations.get: the operation is
//     {"name","done":false} for its first [Server.SetPendingPolls] gets,
//     then {"name","done":true,"response":{"@type":…,"parent":<store>,
//     "documentName":<document>}}. The document exists (STATE_PENDING
//     until then) from the upload's last chunk on.
//   - GET /v1beta/fileSearchStores/<id>/documents lists a store's
//     documents (genai.Document: name, displayName, state, sizeBytes as a
//     string, mimeType, customMetadata); GET and DELETE
//     /v1beta/fileSearchStores/<id>/documents/<doc> get and delete one
//     (?force=true is accepted; the fake's documents have no chunks to
//     keep).
//
// Every call is recorded with its Method (MethodStoreCreate and the
// others below); an upload's chunks are recorded without their bytes.
// Requests with the fileSearch tool are answered as filesearch_query.go
// describes.

// Methods of the fileSearchStores API, as recorded in [Request.Method].
const (
	MethodStoreCreate      = "fileSearchStores.create"
	MethodStoreGet         = "fileSearchStores.get"
	MethodStoreList        = "fileSearchStores.list"
	MethodStoreDelete      = "fileSearchStores.delete"
	MethodStoreUploadStart = "fileSearchStores.upload.start"
	MethodStoreUpload      = "fileSearchStores.upload"
	MethodStoreImport      = "fileSearchStores.importFile"
	MethodOperationGet     = "operations.get"
	MethodDocumentList     = "documents.list"
	MethodDocumentGet      = "documents.get"
	MethodDocumentDelete   = "documents.delete"
)

// Store is a File Search store the Server holds, as fileSearchStores.get
// answers it.
type Store struct {
	Name                  string `json:"name"`
	DisplayName           string `json:"displayName,omitempty"`
	CreateTime            string `json:"createTime"`
	UpdateTime            string `json:"updateTime"`
	ActiveDocumentsCount  string `json:"activeDocumentsCount,omitempty"`
	PendingDocumentsCount string `json:"pendingDocumentsCount,omitempty"`
	SizeBytes             string `json:"sizeBytes,omitempty"`
}

// Document is a document of a store, as documents.get answers it. Data
// (not on the wire) is what was uploaded.
type Document struct {
	Name           string           `json:"name"`
	DisplayName    string           `json:"displayName,omitempty"`
	State          string           `json:"state"`
	SizeBytes      string           `json:"sizeBytes"`
	MIMEType       string           `json:"mimeType"`
	CreateTime     string           `json:"createTime"`
	UpdateTime     string           `json:"updateTime"`
	CustomMetadata []map[string]any `json:"customMetadata,omitempty"`
	Data           []byte           `json:"-"`
}

type fsStore struct {
	Store
	docs map[string]*Document // by full name
}

type fsOperation struct {
	name, store, doc string
	polls            int // gets left before it is done
}

type fsUpload struct {
	store, display, mime string
	meta                 []map[string]any
	data                 []byte
}

type searchStores struct {
	mu       sync.Mutex
	stores   map[string]*fsStore // by full name
	ops      map[string]*fsOperation
	uploads  map[string]*fsUpload
	next     int
	pending  int // SetPendingPolls
	refuse   int // RefuseStoreUploads
	uploaded int // documents made by uploads and imports
	deleted  int // documents deleted
}

var (
	storesRE    = regexp.MustCompile(`^/v1(?:beta|alpha|)/fileSearchStores$`)
	storeRE     = regexp.MustCompile(`^/v1(?:beta|alpha|)/(fileSearchStores/[a-z0-9-]+)$`)
	storeUpRE   = regexp.MustCompile(`^/upload/v1(?:beta|alpha|)/(fileSearchStores/[a-z0-9-]+):uploadToFileSearchStore$`)
	importRE    = regexp.MustCompile(`^/v1(?:beta|alpha|)/(fileSearchStores/[a-z0-9-]+):importFile$`)
	operationRE = regexp.MustCompile(`^/v1(?:beta|alpha|)/((fileSearchStores/[a-z0-9-]+)/(?:upload/)?operations/[a-z0-9-]+)$`)
	docsRE      = regexp.MustCompile(`^/v1(?:beta|alpha|)/(fileSearchStores/[a-z0-9-]+)/documents$`)
	docRE       = regexp.MustCompile(`^/v1(?:beta|alpha|)/((fileSearchStores/[a-z0-9-]+)/documents/[a-z0-9-]+)$`)
	slugRE      = regexp.MustCompile(`[^a-z0-9]+`)
)

// RefuseStoreUploads makes the next n uploads into a store answer 429
// RESOURCE_EXHAUSTED at their start, as the Gemini API does for a
// project over its File Search quota; 0 lifts it.
func (s *Server) RefuseStoreUploads(n int) {
	s.stores.mu.Lock()
	defer s.stores.mu.Unlock()
	s.stores.refuse = n
}

// SetPendingPolls makes every operation started from now on answer
// done:false to its first n operations.get calls.
func (s *Server) SetPendingPolls(n int) {
	s.stores.mu.Lock()
	defer s.stores.mu.Unlock()
	s.stores.pending = n
}

// Stores returns the File Search stores the Server holds, by name.
func (s *Server) Stores() []Store {
	s.stores.mu.Lock()
	defer s.stores.mu.Unlock()
	out := make([]Store, 0, len(s.stores.stores))
	for _, st := range s.stores.stores {
		out = append(out, st.counted())
	}
	slices.SortFunc(out, func(a, b Store) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Documents returns the documents of the store named store (its full
// name), by name; nil when the Server holds no such store.
func (s *Server) Documents(store string) []Document {
	s.stores.mu.Lock()
	defer s.stores.mu.Unlock()
	st := s.stores.stores[store]
	if st == nil {
		return nil
	}
	out := make([]Document, 0, len(st.docs))
	for _, d := range st.docs {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Document) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// DropStore forgets a store and its documents without a request, as
// when it is deleted behind a client's back (by another program, or in
// the console).
func (s *Server) DropStore(name string) {
	s.stores.mu.Lock()
	defer s.stores.mu.Unlock()
	delete(s.stores.stores, name)
}

// StoreCounts returns the documents made by uploads and imports and the
// documents deleted since the Server started.
func (s *Server) StoreCounts() (uploaded, deleted int) {
	s.stores.mu.Lock()
	defer s.stores.mu.Unlock()
	return s.stores.uploaded, s.stores.deleted
}

func (st *fsStore) counted() Store {
	out := st.Store
	var active, pending, size int
	for _, d := range st.docs {
		if d.State == "STATE_ACTIVE" {
			active++
		} else {
			pending++
		}
		size += len(d.Data)
	}
	out.ActiveDocumentsCount = strconv.Itoa(active)
	out.PendingDocumentsCount = strconv.Itoa(pending)
	out.SizeBytes = strconv.Itoa(size)
	return out
}

func slug(display string) string {
	s := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(display), "-"), "-")
	if len(s) > 24 {
		s = strings.Trim(s[:24], "-")
	}
	if s == "" {
		s = "x"
	}
	return s
}

func nowText() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// serveStores answers the fileSearchStores API's requests and says
// whether r was one.
func (s *Server) serveStores(w http.ResponseWriter, r *http.Request, rec Request) bool {
	p := r.URL.Path
	switch {
	case storesRE.MatchString(p) && r.Method == http.MethodPost:
		rec.Method = MethodStoreCreate
		var body struct {
			DisplayName string `json:"displayName"`
		}
		if !s.readJSON(w, r, &rec, &body) {
			return true
		}
		ss := &s.stores
		ss.mu.Lock()
		if ss.stores == nil {
			ss.stores = map[string]*fsStore{}
		}
		ss.next++
		now := nowText()
		st := &fsStore{Store: Store{Name: fmt.Sprintf("fileSearchStores/%s-%06d", slug(body.DisplayName), ss.next),
			DisplayName: body.DisplayName, CreateTime: now, UpdateTime: now}, docs: map[string]*Document{}}
		ss.stores[st.Name] = st
		out := st.counted()
		ss.mu.Unlock()
		s.answerJSON(w, rec, out)
	case storesRE.MatchString(p) && r.Method == http.MethodGet:
		rec.Method = MethodStoreList
		stores := s.Stores()
		page, next := pageOf(len(stores), r)
		s.answerJSON(w, rec, map[string]any{"fileSearchStores": stores[page[0]:page[1]], "nextPageToken": next})
	case storeRE.MatchString(p):
		name := storeRE.FindStringSubmatch(p)[1]
		s.serveStore(w, r, rec, name)
	case storeUpRE.MatchString(p) || importRE.MatchString(p):
		s.serveStoreUpload(w, r, rec)
	case operationRE.MatchString(p) && r.Method == http.MethodGet:
		rec.Method = MethodOperationGet
		name := operationRE.FindStringSubmatch(p)[1]
		ss := &s.stores
		ss.mu.Lock()
		op := ss.ops[name]
		var out map[string]any
		if op != nil {
			out = map[string]any{"name": op.name}
			if op.polls > 0 {
				op.polls--
			} else {
				out["done"] = true
				kind := "ImportFileResponse"
				if strings.Contains(op.name, "/upload/operations/") {
					kind = "UploadToFileSearchStoreResponse"
				}
				out["response"] = map[string]any{
					"@type":        "type.googleapis.com/google.ai.generativelanguage.v1main." + kind,
					"parent":       op.store,
					"documentName": op.doc,
				}
				if st := ss.stores[op.store]; st != nil && st.docs[op.doc] != nil {
					st.docs[op.doc].State = "STATE_ACTIVE"
				}
			}
		}
		ss.mu.Unlock()
		if op == nil {
			s.fail(w, rec, http.StatusNotFound, "Operation not found: "+name)
			return true
		}
		s.answerJSON(w, rec, out)
	case docsRE.MatchString(p) && r.Method == http.MethodGet:
		rec.Method = MethodDocumentList
		store := docsRE.FindStringSubmatch(p)[1]
		s.stores.mu.Lock()
		ok := s.stores.stores[store] != nil
		s.stores.mu.Unlock()
		if !ok {
			s.fail(w, rec, http.StatusNotFound, StoreNotFoundMessage(store))
			return true
		}
		docs := s.Documents(store)
		page, next := pageOf(len(docs), r)
		s.answerJSON(w, rec, map[string]any{"documents": docs[page[0]:page[1]], "nextPageToken": next})
	case docRE.MatchString(p):
		m := docRE.FindStringSubmatch(p)
		s.serveDocument(w, r, rec, m[2], m[1])
	default:
		return false
	}
	return true
}

// StoreNotFoundMessage is the message of the 404 the Server answers for a
// store it does not hold.
func StoreNotFoundMessage(name string) string {
	return fmt.Sprintf("FileSearchStore %s not found.", name)
}

func (s *Server) serveStore(w http.ResponseWriter, r *http.Request, rec Request, name string) {
	ss := &s.stores
	switch r.Method {
	case http.MethodGet:
		rec.Method = MethodStoreGet
		ss.mu.Lock()
		st := ss.stores[name]
		var out Store
		if st != nil {
			out = st.counted()
		}
		ss.mu.Unlock()
		if st == nil {
			s.fail(w, rec, http.StatusNotFound, StoreNotFoundMessage(name))
			return
		}
		s.answerJSON(w, rec, out)
	case http.MethodDelete:
		rec.Method = MethodStoreDelete
		ss.mu.Lock()
		st := ss.stores[name]
		full := st != nil && len(st.docs) > 0 && r.URL.Query().Get("force") != "true"
		if st != nil && !full {
			ss.deleted += len(st.docs)
			delete(ss.stores, name)
		}
		ss.mu.Unlock()
		switch {
		case st == nil:
			s.fail(w, rec, http.StatusNotFound, StoreNotFoundMessage(name))
		case full:
			s.fail(w, rec, http.StatusBadRequest, "Cannot delete non-empty FileSearchStore "+name+" without force.")
		default:
			s.answerJSON(w, rec, map[string]any{})
		}
	default:
		rec.Method = r.Method + " " + r.URL.Path
		s.fail(w, rec, http.StatusNotFound, "fakeapi: no such method")
	}
}

func (s *Server) serveDocument(w http.ResponseWriter, r *http.Request, rec Request, store, name string) {
	ss := &s.stores
	ss.mu.Lock()
	st := ss.stores[store]
	var d *Document
	if st != nil {
		d = st.docs[name]
	}
	var out Document
	switch {
	case d == nil:
	case r.Method == http.MethodGet:
		out = *d
	case r.Method == http.MethodDelete:
		delete(st.docs, name)
		ss.deleted++
	}
	ss.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		rec.Method = MethodDocumentGet
	case http.MethodDelete:
		rec.Method = MethodDocumentDelete
	default:
		rec.Method = r.Method + " " + r.URL.Path
		s.fail(w, rec, http.StatusNotFound, "fakeapi: no such method")
		return
	}
	if d == nil {
		s.fail(w, rec, http.StatusNotFound, fmt.Sprintf("Document %s not found.", name))
		return
	}
	if r.Method == http.MethodGet {
		s.answerJSON(w, rec, out)
		return
	}
	s.answerJSON(w, rec, map[string]any{})
}

// readJSON reads a small JSON body into v, or answers 400 and says no.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, rec *Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rec.Body = b
	if err != nil || len(b) > 0 && json.Unmarshal(b, v) != nil {
		s.fail(w, *rec, http.StatusBadRequest, "fakeapi: bad JSON body")
		return false
	}
	return true
}

// answerJSON records rec as a success and answers v.
func (s *Server) answerJSON(w http.ResponseWriter, rec Request, v any) {
	rec.Status = http.StatusOK
	s.record(rec)
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// pageOf returns the [from, to) of the page a list request asks for
// (pageSize, default 10, at most 20 as the API's; pageToken, an offset)
// among n items, and the next page's token ("" after the last).
func pageOf(n int, r *http.Request) ([2]int, string) {
	size, _ := strconv.Atoi(r.URL.Query().Get("pageSize"))
	if size <= 0 {
		size = 10
	}
	size = min(size, 20)
	from, _ := strconv.Atoi(r.URL.Query().Get("pageToken"))
	from = min(max(from, 0), n)
	to := min(from+size, n)
	next := ""
	if to < n {
		next = strconv.Itoa(to)
	}
	return [2]int{from, to}, next
}
