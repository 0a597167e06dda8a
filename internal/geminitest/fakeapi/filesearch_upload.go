package fakeapi

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDocumentDisplayName is the most characters of a document's display
// name the API takes.
const MaxDocumentDisplayName = 512

// serveStoreUpload answers uploadToFileSearchStore (its start and its
// chunks) and importFile (see filesearch.go).
func (s *Server) serveStoreUpload(w http.ResponseWriter, r *http.Request, rec Request) {
	ss := &s.stores
	if m := importRE.FindStringSubmatch(r.URL.Path); m != nil {
		rec.Method = MethodStoreImport
		var body struct {
			FileName string `json:"fileName"`
		}
		if !s.readJSON(w, r, &rec, &body) {
			return
		}
		id := strings.TrimPrefix(body.FileName, "files/")
		s.files.mu.Lock()
		f := s.files.files[id]
		var u *fsUpload
		if f != nil {
			u = &fsUpload{store: m[1], display: f.DisplayName, mime: f.MIMEType, data: f.data}
		}
		s.files.mu.Unlock()
		if f == nil {
			s.fail(w, rec, http.StatusForbidden, FileNotFoundMessage(id))
			return
		}
		op, ok := s.newDocument(u, "operations")
		if !ok {
			s.fail(w, rec, http.StatusNotFound, StoreNotFoundMessage(m[1]))
			return
		}
		s.answerJSON(w, rec, map[string]any{"name": op})
		return
	}
	store := storeUpRE.FindStringSubmatch(r.URL.Path)[1]
	if r.Method != http.MethodPost {
		rec.Method = r.Method + " " + r.URL.Path
		s.fail(w, rec, http.StatusNotFound, "fakeapi: no such method")
		return
	}
	uid := r.URL.Query().Get("upload_id")
	if uid == "" {
		rec.Method = MethodStoreUploadStart
		if r.Header.Get("X-Goog-Upload-Protocol") != "resumable" || r.Header.Get("X-Goog-Upload-Command") != "start" {
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: an upload starts with X-Goog-Upload-Protocol: resumable and X-Goog-Upload-Command: start")
			return
		}
		var body struct {
			DisplayName    string           `json:"displayName"`
			MIMEType       string           `json:"mimeType"`
			CustomMetadata []map[string]any `json:"customMetadata"`
		}
		if !s.readJSON(w, r, &rec, &body) {
			return
		}
		if n := utf8.RuneCountInString(body.DisplayName); n > MaxDocumentDisplayName {
			// The API reference: "The display name must be no more than
			// 512 characters in length".
			s.fail(w, rec, http.StatusBadRequest, fmt.Sprintf("fakeapi: a document's display name of %d characters is over %d", n, MaxDocumentDisplayName))
			return
		}
		mime := body.MIMEType
		if mime == "" {
			mime = r.Header.Get("X-Goog-Upload-Header-Content-Type")
		}
		ss.mu.Lock()
		if ss.refuse > 0 {
			ss.refuse--
			ss.mu.Unlock()
			s.fail(w, rec, http.StatusTooManyRequests, "Resource has been exhausted (e.g. check quota).")
			return
		}
		ok := ss.stores[store] != nil
		if ok {
			if ss.uploads == nil {
				ss.uploads = map[string]*fsUpload{}
			}
			ss.next++
			uid = "fs" + strconv.Itoa(ss.next)
			ss.uploads[uid] = &fsUpload{store: store, display: body.DisplayName, mime: mime, meta: body.CustomMetadata}
		}
		ss.mu.Unlock()
		if !ok {
			s.fail(w, rec, http.StatusNotFound, StoreNotFoundMessage(store))
			return
		}
		if mime == "" {
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: the upload names no MIME type")
			return
		}
		w.Header().Set("X-Goog-Upload-Url", s.URL()+"/upload/v1beta/"+store+":uploadToFileSearchStore?upload_id="+uid+"&upload_protocol=resumable")
		w.Header().Set("X-Goog-Upload-Status", "active")
		s.answerJSON(w, rec, map[string]any{})
		return
	}
	rec.Method = MethodStoreUpload
	cmd := r.Header.Get("X-Goog-Upload-Command")
	off, err := strconv.Atoi(r.Header.Get("X-Goog-Upload-Offset"))
	chunk, rerr := io.ReadAll(io.LimitReader(r.Body, MaxFileBytes+1))
	ss.mu.Lock()
	u := ss.uploads[uid]
	bad := u == nil || err != nil || rerr != nil || !strings.HasPrefix(cmd, "upload") || off != len(u.data) || len(u.data)+len(chunk) > MaxFileBytes
	if bad {
		delete(ss.uploads, uid)
	} else {
		u.data = append(u.data, chunk...)
	}
	final := !bad && strings.Contains(cmd, "finalize")
	if final {
		delete(ss.uploads, uid)
	}
	ss.mu.Unlock()
	if bad {
		w.Header().Set("X-Goog-Upload-Status", "final")
		s.fail(w, rec, http.StatusBadRequest, "fakeapi: no such upload, a bad upload command or offset, or too big")
		return
	}
	if !final {
		w.Header().Set("X-Goog-Upload-Status", "active")
		s.answerJSON(w, rec, map[string]any{})
		return
	}
	op, ok := s.newDocument(u, "upload/operations")
	w.Header().Set("X-Goog-Upload-Status", "final")
	if !ok {
		s.fail(w, rec, http.StatusNotFound, StoreNotFoundMessage(u.store))
		return
	}
	s.answerJSON(w, rec, map[string]any{"name": op})
}

// newDocument adds a pending document made of u to its store and an
// operation for it under kind ("upload/operations" or "operations"), and
// returns the operation's name; false when the store is gone.
func (s *Server) newDocument(u *fsUpload, kind string) (string, bool) {
	ss := &s.stores
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st := ss.stores[u.store]
	if st == nil {
		return "", false
	}
	ss.next++
	now := nowText()
	d := &Document{Name: fmt.Sprintf("%s/documents/%s-%06d", u.store, slug(u.display), ss.next), DisplayName: u.display,
		State: "STATE_PENDING", SizeBytes: strconv.Itoa(len(u.data)), MIMEType: u.mime, CreateTime: now, UpdateTime: now,
		CustomMetadata: u.meta, Data: u.data}
	st.docs[d.Name] = d
	ss.uploaded++
	if ss.ops == nil {
		ss.ops = map[string]*fsOperation{}
	}
	op := &fsOperation{name: fmt.Sprintf("%s/%s/op-%06d", u.store, kind, ss.next), store: u.store, doc: d.Name, polls: ss.pending}
	if op.polls == 0 {
		d.State = "STATE_ACTIVE"
	}
	ss.ops[op.name] = op
	return op.name, true
}
