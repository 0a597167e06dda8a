package fakeapi

import (
	"crypto/sha256"
	"encoding/base64"
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

// Media: inlineData and fileData parts, and the Files API.
//
// The Server answers the Files API as the Gemini API does, in the wire
// protocol of the genai SDK's Files.Upload (a resumable upload):
//
//   - POST /upload/v1beta/files with X-Goog-Upload-Protocol: resumable,
//     X-Goog-Upload-Command: start, X-Goog-Upload-Header-Content-Type and
//     a body {"file":{…}} starts an upload; the answer's
//     X-Goog-Upload-Url header is where its bytes go;
//   - POST to that URL with X-Goog-Upload-Command "upload" (more chunks
//     follow) or "upload, finalize" (the last) and X-Goog-Upload-Offset
//     sends the bytes; the last answer has X-Goog-Upload-Status: final and
//     the body {"file":{…}} (a genai.File: name "files/<id>", uri,
//     mimeType, sizeBytes as a string, sha256Hash, state);
//   - GET /v1beta/files/<id> is files.get, DELETE /v1beta/files/<id>
//     files.delete (answered {}).
//
// A file is ACTIVE at once, or PROCESSING for the first
// [Server.SetProcessingGets] files.get calls. A generateContent or
// streamGenerateContent request is refused when one of its fileData
// parts names a file the Server does not hold (never uploaded, deleted,
// expired): 403 PERMISSION_DENIED with the API's message
// ([FileNotFoundMessage]); or one not ACTIVE yet: 400
// ([FileNotActiveMessage]). A request body over [InlineRequestLimit]
// bytes is refused with 400 as the API refuses it. The media parts of a
// request are recorded in [Request.Media].

// InlineRequestLimit is the largest request body the Server (like the
// Gemini API) accepts: 20 MiB, inline data included.
const InlineRequestLimit = 20 << 20

// Media is one inlineData or fileData part of a request's contents.
type Media struct {
	// Content is the index of its content in contents; Role that
	// content's role.
	Content int
	Role    string
	// MIMEType is the part's mimeType.
	MIMEType string
	// Size is the number of bytes of inline data (0 for fileData), and
	// SHA256 their hex digest.
	Size   int
	SHA256 string
	// FileURI is the fileData's fileUri, "" for inline data.
	FileURI string
}

// Blob is an inlineData part in the API's JSON (genai.Blob): data is
// base64.
type Blob struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"`
}

// FileData is a fileData part in the API's JSON (genai.FileData).
type FileData struct {
	MIMEType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

// File is a file the Server holds, as files.get answers it.
type File struct {
	Name           string `json:"name"`
	DisplayName    string `json:"displayName,omitempty"`
	MIMEType       string `json:"mimeType"`
	SizeBytes      string `json:"sizeBytes"`
	CreateTime     string `json:"createTime"`
	UpdateTime     string `json:"updateTime"`
	ExpirationTime string `json:"expirationTime"`
	SHA256Hash     string `json:"sha256Hash"`
	URI            string `json:"uri"`
	State          string `json:"state"`
	Source         string `json:"source"`
}

// FileNotFoundMessage is the message of the error the Server answers a
// request naming a file it does not hold, by its id.
func FileNotFoundMessage(id string) string {
	return fmt.Sprintf("You do not have permission to access the File %s or it may not exist.", id)
}

// FileNotActiveMessage is the message of the error the Server answers a
// request naming a file still PROCESSING.
func FileNotActiveMessage(id string) string {
	return fmt.Sprintf("The File %s is not in an ACTIVE state and usage is not allowed.", id)
}

// PayloadTooLargeMessage is the message of the error the Server answers a
// request body over InlineRequestLimit.
var PayloadTooLargeMessage = fmt.Sprintf("Request payload size exceeds the limit: %d bytes.", InlineRequestLimit)

// MaxFileBytes bounds the bytes of one upload the Server keeps.
const MaxFileBytes = 64 << 20

type storedFile struct {
	File
	data []byte
	gets int // files.get calls left before it is ACTIVE
}

type upload struct {
	name, display, mime string
	data                []byte
}

type fileStore struct {
	mu        sync.Mutex
	files     map[string]*storedFile // by id
	uploads   map[string]*upload     // by upload id
	next      int
	procGets  int
	deleted   []string // ids, in order
	uploadsOK int      // uploads finished
}

var (
	filesRE  = regexp.MustCompile(`^/v1(?:beta|alpha|)/files/([a-z0-9-]+)$`)
	uploadRE = regexp.MustCompile(`^/upload/v1(?:beta|alpha|)/files$`)
)

// Methods of the Files API, as recorded in [Request.Method].
const (
	MethodUploadStart = "files.upload.start"
	MethodUpload      = "files.upload"
	MethodFileGet     = "files.get"
	MethodFileDelete  = "files.delete"
)

// SetProcessingGets makes every file uploaded from now on PROCESSING for
// its first n files.get calls, ACTIVE after.
func (s *Server) SetProcessingGets(n int) {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	s.files.procGets = n
}

// Files returns the files the Server holds, by name order.
func (s *Server) Files() []File {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	out := make([]File, 0, len(s.files.files))
	for _, f := range s.files.files {
		out = append(out, f.File)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Deleted returns the names of the files deleted through files.delete, in
// order.
func (s *Server) Deleted() []string {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	out := make([]string, len(s.files.deleted))
	for i, id := range s.files.deleted {
		out[i] = "files/" + id
	}
	return out
}

// Uploads returns how many uploads have been finished.
func (s *Server) Uploads() int {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	return s.files.uploadsOK
}

// ExpireFiles forgets every file the Server holds, as the API does 48
// hours after their upload; they are not counted as deleted.
func (s *Server) ExpireFiles() {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	s.files.files = nil
}

// serveFiles answers the Files API's requests and says whether r was one.
func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request, rec Request) bool {
	fs := &s.files
	switch {
	case uploadRE.MatchString(r.URL.Path) && r.Method == http.MethodPost && r.URL.Query().Get("upload_id") == "":
		rec.Method = MethodUploadStart
		if r.Header.Get("X-Goog-Upload-Protocol") != "resumable" || r.Header.Get("X-Goog-Upload-Command") != "start" {
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: an upload starts with X-Goog-Upload-Protocol: resumable and X-Goog-Upload-Command: start")
			return true
		}
		var body struct {
			File struct {
				Name        string `json:"name"`
				DisplayName string `json:"displayName"`
				MIMEType    string `json:"mimeType"`
			} `json:"file"`
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rec.Body = b
		if err != nil || len(b) > 0 && json.Unmarshal(b, &body) != nil {
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: bad upload start body")
			return true
		}
		mime := body.File.MIMEType
		if mime == "" {
			mime = r.Header.Get("X-Goog-Upload-Header-Content-Type")
		}
		if mime == "" {
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: the upload names no MIME type")
			return true
		}
		fs.mu.Lock()
		if fs.uploads == nil {
			fs.uploads = map[string]*upload{}
		}
		fs.next++
		uid := "u" + strconv.Itoa(fs.next)
		fs.uploads[uid] = &upload{name: strings.TrimPrefix(body.File.Name, "files/"), display: body.File.DisplayName, mime: mime}
		fs.mu.Unlock()
		rec.Status = http.StatusOK
		s.record(rec)
		w.Header().Set("X-Goog-Upload-Url", s.URL()+"/upload/v1beta/files?upload_id="+uid+"&upload_protocol=resumable")
		w.Header().Set("X-Goog-Upload-Status", "active")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}"))
		return true
	case uploadRE.MatchString(r.URL.Path) && r.Method == http.MethodPost:
		rec.Method = MethodUpload
		uid := r.URL.Query().Get("upload_id")
		cmd := r.Header.Get("X-Goog-Upload-Command")
		off, err := strconv.Atoi(r.Header.Get("X-Goog-Upload-Offset"))
		fs.mu.Lock()
		u := fs.uploads[uid]
		fs.mu.Unlock()
		if u == nil || err != nil || !strings.HasPrefix(cmd, "upload") {
			w.Header().Set("X-Goog-Upload-Status", "final")
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: no such upload, or a bad upload command or offset")
			return true
		}
		chunk, err := io.ReadAll(io.LimitReader(r.Body, MaxFileBytes+1))
		fs.mu.Lock()
		if err != nil || off != len(u.data) || len(u.data)+len(chunk) > MaxFileBytes {
			delete(fs.uploads, uid)
			fs.mu.Unlock()
			w.Header().Set("X-Goog-Upload-Status", "final")
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: upload chunk at a wrong offset, or too big")
			return true
		}
		u.data = append(u.data, chunk...)
		if !strings.Contains(cmd, "finalize") {
			fs.mu.Unlock()
			rec.Status = http.StatusOK
			s.record(rec)
			w.Header().Set("X-Goog-Upload-Status", "active")
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("{}"))
			return true
		}
		delete(fs.uploads, uid)
		id := u.name
		if id == "" {
			fs.next++
			id = fmt.Sprintf("fake%06d", fs.next)
		}
		now := time.Now().UTC()
		sum := sha256.Sum256(u.data)
		f := &storedFile{File: File{
			Name: "files/" + id, DisplayName: u.display, MIMEType: u.mime, SizeBytes: strconv.Itoa(len(u.data)),
			CreateTime: now.Format(time.RFC3339Nano), UpdateTime: now.Format(time.RFC3339Nano),
			ExpirationTime: now.Add(48 * time.Hour).Format(time.RFC3339Nano),
			SHA256Hash:     base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("%x", sum))),
			URI:            s.URL() + "/v1beta/files/" + id, State: "ACTIVE", Source: "UPLOADED",
		}, data: u.data, gets: fs.procGets}
		if f.gets > 0 {
			f.State = "PROCESSING"
		}
		if fs.files == nil {
			fs.files = map[string]*storedFile{}
		}
		fs.files[id] = f
		fs.uploadsOK++
		out := f.File
		fs.mu.Unlock()
		rec.Status = http.StatusOK
		s.record(rec)
		b, _ := json.Marshal(map[string]any{"file": out})
		w.Header().Set("X-Goog-Upload-Status", "final")
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return true
	}
	m := filesRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return false
	}
	id := m[1]
	switch r.Method {
	case http.MethodGet:
		rec.Method = MethodFileGet
		fs.mu.Lock()
		f := fs.files[id]
		var out File
		if f != nil {
			if f.gets > 0 {
				f.gets--
			} else {
				f.State = "ACTIVE"
			}
			out = f.File
		}
		fs.mu.Unlock()
		if f == nil {
			s.fail(w, rec, http.StatusForbidden, FileNotFoundMessage(id))
			return true
		}
		rec.Status = http.StatusOK
		s.record(rec)
		b, _ := json.Marshal(out)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	case http.MethodDelete:
		rec.Method = MethodFileDelete
		fs.mu.Lock()
		f := fs.files[id]
		if f != nil {
			delete(fs.files, id)
			fs.deleted = append(fs.deleted, id)
		}
		fs.mu.Unlock()
		if f == nil {
			s.fail(w, rec, http.StatusForbidden, FileNotFoundMessage(id))
			return true
		}
		rec.Status = http.StatusOK
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}"))
	default:
		rec.Method = r.Method + " " + r.URL.Path
		s.fail(w, rec, http.StatusNotFound, "fakeapi: no such method")
	}
	return true
}

// refuseFiles records the media parts of req in rec and answers an error,
// and says so, when one names a file the Server does not hold or that is
// not ACTIVE. (A request too big is refused before it is decoded.)
func (s *Server) refuseFiles(w http.ResponseWriter, rec *Request, req apiRequest) bool {
	for i, c := range req.Contents {
		for _, p := range c.Parts {
			switch {
			case p.InlineData != nil:
				data, err := base64.StdEncoding.DecodeString(p.InlineData.Data)
				if err != nil {
					data, err = base64.URLEncoding.DecodeString(p.InlineData.Data)
				}
				if err != nil || p.InlineData.MIMEType == "" {
					s.fail(w, *rec, http.StatusBadRequest, fmt.Sprintf("Invalid value at 'contents[%d].parts.inline_data': "+
						"a mimeType and base64 data are required", i))
					return true
				}
				rec.Media = append(rec.Media, Media{Content: i, Role: c.Role, MIMEType: p.InlineData.MIMEType,
					Size: len(data), SHA256: fmt.Sprintf("%x", sha256.Sum256(data))})
			case p.FileData != nil:
				rec.Media = append(rec.Media, Media{Content: i, Role: c.Role, MIMEType: p.FileData.MIMEType, FileURI: p.FileData.FileURI})
				id := p.FileData.FileURI[strings.LastIndex(p.FileData.FileURI, "/")+1:]
				s.files.mu.Lock()
				f := s.files.files[id]
				ok := f != nil && p.FileData.FileURI == f.URI
				active := ok && f.State == "ACTIVE"
				s.files.mu.Unlock()
				if !ok {
					s.fail(w, *rec, http.StatusForbidden, FileNotFoundMessage(id))
					return true
				}
				if !active {
					s.fail(w, *rec, http.StatusBadRequest, FileNotActiveMessage(id))
					return true
				}
			}
		}
	}
	return false
}
