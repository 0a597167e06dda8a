package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Explicit context caches: the cachedContents API.
//
// The Server answers it as the Gemini API does, in the wire format of the
// genai SDK's Caches:
//
//   - POST /v1beta/cachedContents with a CachedContent body (model
//     "models/<id>", contents, systemInstruction, ttl as a protobuf
//     duration such as "3600s", or expireTime, displayName) creates one
//     and answers it: name "cachedContents/<id>", model, createTime,
//     updateTime, expireTime, usageMetadata.totalTokenCount. A cache whose
//     contents count fewer than [MinCacheTokens] of its model is refused
//     with 400 ([CacheTooSmallMessage]);
//   - GET /v1beta/cachedContents/<id> answers it, PATCH (updateMask ttl or
//     expireTime) moves its expiry, DELETE deletes it (answered {}); one
//     the Server does not hold (never made, deleted, expired) is 403
//     PERMISSION_DENIED with the API's message ([CacheNotFoundMessage]).
//
// A generateContent or streamGenerateContent request with cachedContent is
// answered as if the cache's systemInstruction and contents came before
// its own contents: its usageMetadata's promptTokenCount counts them all,
// and cachedContentTokenCount those of the cache (as the API reports
// them: the cached tokens are part of the prompt's, billed at a lower
// rate). It is refused with 400 when it names a cache of another model
// ([CacheModelMessage]) or also sets systemInstruction, tools or
// toolConfig ([CacheWithSystemMessage]), and with 403 when the cache is
// gone. The Server counts a cache's tokens as it counts a prompt's: the
// words of its contents ([CountTokens]), not of its systemInstruction.

// MinCacheTokens is the least token count of a cache of model the API
// takes: 1,024 for Flash models, 2,048 for Flash-Lite, 4,096 for Pro and
// any other.
func MinCacheTokens(model string) int {
	model = strings.TrimPrefix(model, "models/")
	switch {
	case strings.Contains(model, "flash-lite"):
		return 2048
	case strings.Contains(model, "flash"):
		return 1024
	}
	return 4096
}

// CacheTooSmallMessage is the API's message for a cache under its model's
// minimum.
func CacheTooSmallMessage(tokens, least int) string {
	return fmt.Sprintf("Cached content is too small. total_token_count=%d, min_total_token_count=%d", tokens, least)
}

// CacheNotFoundMessage is the API's message for a cache it does not hold.
const CacheNotFoundMessage = "CachedContent not found (or permission denied)"

// CacheModelMessage is the API's message for a request that uses a cache
// made for another model.
func CacheModelMessage(model, cacheModel string) string {
	return fmt.Sprintf("Model used by GenerateContent request (models/%s) and CachedContent (%s) has to be the same.", model, cacheModel)
}

// CacheWithSystemMessage is the API's message for a request that sets a
// systemInstruction, tools or toolConfig beside cachedContent.
const CacheWithSystemMessage = "CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request."

// Methods of the cachedContents API, as recorded in [Request.Method].
const (
	MethodCacheCreate = "cachedContents.create"
	MethodCacheGet    = "cachedContents.get"
	MethodCacheUpdate = "cachedContents.patch"
	MethodCacheDelete = "cachedContents.delete"
)

// Cache is a cache the Server holds.
type Cache struct {
	Name        string // "cachedContents/<id>"
	Model       string // "models/<id>"
	DisplayName string
	Tokens      int
	Created     time.Time
	Expire      time.Time
	// System is the text of its systemInstruction; Contents the number
	// of its contents.
	System   string
	Contents int

	contents []content
	system   *content
}

type cacheStore struct {
	mu      sync.Mutex
	next    int
	caches  map[string]*Cache // by name
	deleted []string
	created int
	now     func() time.Time
}

var cacheRE = regexp.MustCompile(`^/v1(?:beta|alpha|)/(cachedContents(?:/[A-Za-z0-9_-]+)?)$`)

// maxCacheBody bounds a cachedContents.create body.
const maxCacheBody = 64 << 20

// Caches returns the caches the Server holds (expired ones left out).
func (s *Server) Caches() []Cache {
	cs := &s.caches
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []Cache
	for _, c := range cs.caches {
		if cs.clock().Before(c.Expire) {
			out = append(out, *c)
		}
	}
	return out
}

// CachesCreated is how many caches were created.
func (s *Server) CachesCreated() int {
	s.caches.mu.Lock()
	defer s.caches.mu.Unlock()
	return s.caches.created
}

// DeletedCaches are the names of the caches deleted by cachedContents.delete.
func (s *Server) DeletedCaches() []string {
	s.caches.mu.Lock()
	defer s.caches.mu.Unlock()
	return append([]string(nil), s.caches.deleted...)
}

// ExpireCaches makes every cache the Server holds expire now, as its TTL
// would; they are not counted as deleted.
func (s *Server) ExpireCaches() {
	s.caches.mu.Lock()
	defer s.caches.mu.Unlock()
	s.caches.caches = nil
}

// SetCacheClock sets the clock against which caches expire (nil: the
// real one).
func (s *Server) SetCacheClock(now func() time.Time) {
	s.caches.mu.Lock()
	defer s.caches.mu.Unlock()
	s.caches.now = now
}

func (cs *cacheStore) clock() time.Time {
	if cs.now != nil {
		return cs.now()
	}
	return time.Now()
}

// lookup returns the live cache name, under cs.mu.
func (cs *cacheStore) lookup(name string) *Cache {
	c := cs.caches[name]
	if c == nil {
		return nil
	}
	if !cs.clock().Before(c.Expire) {
		delete(cs.caches, name)
		return nil
	}
	return c
}

type cacheBody struct {
	Model             string    `json:"model"`
	DisplayName       string    `json:"displayName"`
	Contents          []content `json:"contents"`
	SystemInstruction *content  `json:"systemInstruction"`
	TTL               string    `json:"ttl"`
	ExpireTime        string    `json:"expireTime"`
	Tools             []any     `json:"tools"`
}

// expiry is when a cache made or updated at now expires, from b's ttl or
// expireTime (an hour when it sets neither, as the API's default).
func (b cacheBody) expiry(now time.Time) (time.Time, error) {
	switch {
	case b.TTL != "":
		if !strings.HasSuffix(b.TTL, "s") {
			return time.Time{}, fmt.Errorf("bad ttl %q: a duration in seconds such as \"3600s\"", b.TTL)
		}
		secs, err := strconv.ParseFloat(strings.TrimSuffix(b.TTL, "s"), 64)
		if err != nil || secs <= 0 {
			return time.Time{}, fmt.Errorf("bad ttl %q: a positive duration in seconds such as \"3600s\"", b.TTL)
		}
		return now.Add(time.Duration(secs * float64(time.Second))), nil
	case b.ExpireTime != "":
		t, err := time.Parse(time.RFC3339Nano, b.ExpireTime)
		if err != nil {
			return time.Time{}, fmt.Errorf("bad expireTime %q", b.ExpireTime)
		}
		return t, nil
	}
	return now.Add(time.Hour), nil
}

func (c *Cache) wire() []byte {
	b, _ := json.Marshal(map[string]any{
		"name":          c.Name,
		"model":         c.Model,
		"displayName":   c.DisplayName,
		"createTime":    c.Created.UTC().Format(time.RFC3339Nano),
		"updateTime":    c.Created.UTC().Format(time.RFC3339Nano),
		"expireTime":    c.Expire.UTC().Format(time.RFC3339Nano),
		"usageMetadata": map[string]any{"totalTokenCount": c.Tokens},
	})
	return b
}

// serveCaches answers the cachedContents API's requests and says whether
// r was one.
func (s *Server) serveCaches(w http.ResponseWriter, r *http.Request, rec Request) bool {
	m := cacheRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return false
	}
	cs := &s.caches
	name := m[1]
	reply := func(b []byte) {
		rec.Status = http.StatusOK
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
	switch {
	case name == "cachedContents" && r.Method == http.MethodPost:
		rec.Method = MethodCacheCreate
		raw, err := io.ReadAll(io.LimitReader(r.Body, maxCacheBody+1))
		var body cacheBody
		if err != nil || len(raw) > maxCacheBody || json.Unmarshal(raw, &body) != nil {
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: bad cachedContents body")
			return true
		}
		if !strings.HasPrefix(body.Model, "models/") {
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: a cache names its model as models/<id>")
			return true
		}
		rec.Model = strings.TrimPrefix(body.Model, "models/")
		tokens := countContents(body.Contents)
		if least := MinCacheTokens(body.Model); tokens < least {
			s.fail(w, rec, http.StatusBadRequest, CacheTooSmallMessage(tokens, least))
			return true
		}
		cs.mu.Lock()
		now := cs.clock()
		exp, err := body.expiry(now)
		if err != nil {
			cs.mu.Unlock()
			s.fail(w, rec, http.StatusBadRequest, "fakeapi: "+err.Error())
			return true
		}
		cs.next++
		c := &Cache{Name: fmt.Sprintf("cachedContents/c%d", cs.next), Model: body.Model, DisplayName: body.DisplayName,
			Tokens: tokens, Created: now, Expire: exp, Contents: len(body.Contents), contents: body.Contents, system: body.SystemInstruction}
		if body.SystemInstruction != nil {
			c.System = joinParts(body.SystemInstruction.Parts)
		}
		if cs.caches == nil {
			cs.caches = map[string]*Cache{}
		}
		cs.caches[c.Name] = c
		cs.created++
		b := c.wire()
		cs.mu.Unlock()
		reply(b)
	case name != "cachedContents" && (r.Method == http.MethodGet || r.Method == http.MethodPatch || r.Method == http.MethodDelete):
		rec.Method = map[string]string{http.MethodGet: MethodCacheGet, http.MethodPatch: MethodCacheUpdate, http.MethodDelete: MethodCacheDelete}[r.Method]
		var body cacheBody
		if r.Method == http.MethodPatch {
			raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil || json.Unmarshal(raw, &body) != nil {
				s.fail(w, rec, http.StatusBadRequest, "fakeapi: bad cachedContents.patch body")
				return true
			}
		}
		cs.mu.Lock()
		c := cs.lookup(name)
		if c == nil {
			cs.mu.Unlock()
			s.fail(w, rec, http.StatusForbidden, CacheNotFoundMessage)
			return true
		}
		var b []byte
		switch r.Method {
		case http.MethodDelete:
			delete(cs.caches, name)
			cs.deleted = append(cs.deleted, name)
			b = []byte("{}")
		case http.MethodPatch:
			exp, err := body.expiry(cs.clock())
			if err != nil || body.TTL == "" && body.ExpireTime == "" {
				cs.mu.Unlock()
				s.fail(w, rec, http.StatusBadRequest, "fakeapi: a cache's update sets ttl or expireTime")
				return true
			}
			c.Expire = exp
			b = c.wire()
		default:
			b = c.wire()
		}
		cs.mu.Unlock()
		reply(b)
	default:
		rec.Method = r.Method + " " + r.URL.Path
		s.fail(w, rec, http.StatusNotFound, "fakeapi: no such method")
	}
	return true
}

// applyCache puts the cache a generate request names before its contents,
// or refuses the request as the API would; it says whether it answered.
func (s *Server) applyCache(w http.ResponseWriter, rec *Request, req *apiRequest) bool {
	if req.CachedContent == "" {
		return false
	}
	rec.CachedContent = req.CachedContent
	if req.SystemInstruction != nil || len(req.Tools) > 0 || req.HasToolConfig() {
		s.fail(w, *rec, http.StatusBadRequest, CacheWithSystemMessage)
		return true
	}
	cs := &s.caches
	cs.mu.Lock()
	c := cs.lookup(req.CachedContent)
	var cached []content
	var system *content
	var model string
	if c != nil {
		cached, system, model = c.contents, c.system, c.Model
	}
	cs.mu.Unlock()
	if c == nil {
		s.fail(w, *rec, http.StatusForbidden, CacheNotFoundMessage)
		return true
	}
	if model != "models/"+rec.Model {
		s.fail(w, *rec, http.StatusBadRequest, CacheModelMessage(rec.Model, model))
		return true
	}
	rec.CachedTokens = countContents(cached)
	req.SystemInstruction = system
	req.Contents = append(append([]content(nil), cached...), req.Contents...)
	return false
}
