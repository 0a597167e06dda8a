package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// filesTurn is a turn whose prompt starts with a file context of n words
// and its heading (n+2 tokens to the fake), as the expert tools send it.
func filesTurn(owner string, n int, prompt string) backend.Turn {
	files := "## Files\n" + strings.Repeat("word ", n) + "\n\n"
	return backend.Turn{Prompt: files + prompt, ContextLen: len(files), Owner: owner, SystemPrompt: "Review the code."}
}

// TestContextCache: a context over the model's minimum is cached by the
// first turn and used by the next one, sending only the rest; a second
// conversation of the same caller with the same files uses it too, one
// of another caller does not; the usage reports the cached tokens; the
// history keeps the whole prompt; the cache goes with its session, and
// at Close.
func TestContextCache(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(filesTurn("token:a", 1500, "## Question\nwhat does it do?"))
	if n := f.fake.CachesCreated(); n != 1 {
		t.Fatalf("%d caches created, want 1", n)
	}
	cache := f.fake.Caches()[0]
	if cache.Tokens != 1502 || cache.System != "Review the code." || cache.Model != "models/"+newestFlash {
		t.Fatalf("cache of %d tokens, system %q, model %q", cache.Tokens, cache.System, cache.Model)
	}
	r := f.streams()[0]
	if r.CachedContent != cache.Name || strings.Contains(string(r.Body), "word word") || strings.Contains(string(r.Body), "systemInstruction") ||
		r.Prompt != "## Question\nwhat does it do?" || r.SystemInstruction != "Review the code." {
		t.Fatalf("first request: cache %q, prompt %q, body %.300s", r.CachedContent, r.Prompt, r.Body)
	}
	if u := a.Usage; u == nil || u.CachedTokens != 1502 || u.PromptTokens != 1502+6 {
		t.Fatalf("usage %+v", a.Usage)
	}

	// The next turn: the same cache, the rest of the conversation sent.
	b := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "and the tests?", Owner: "token:a", SystemPrompt: "Review the code."})
	r = f.streams()[1]
	if f.fake.CachesCreated() != 1 || r.CachedContent != cache.Name || r.NumContents != 4 || strings.Contains(string(r.Body), "word word") {
		t.Fatalf("second turn: %d caches, request with %q and %d contents", f.fake.CachesCreated(), r.CachedContent, r.NumContents)
	}
	if b.Usage == nil || b.Usage.CachedTokens != 1502 {
		t.Fatalf("second turn's usage %+v", b.Usage)
	}
	// The history holds everything to send the turn without a cache.
	raws, _, err := f.hist.LoadTurns(guard(t), a.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var tr turnRecord
	if err := json.Unmarshal(raws[0], &tr); err != nil || tr.ContextParts != 1 || len(tr.User.Parts) != 2 ||
		!strings.HasPrefix(tr.User.Parts[0].Text, "## Files\nword word") || tr.User.Parts[1].Text != "## Question\nwhat does it do?" {
		t.Fatalf("first turn's record: %s", raws[0])
	}

	// Another conversation of the same caller, same files and role: the
	// same cache. Another caller's: a cache of its own.
	c := f.mustRun(filesTurn("token:a", 1500, "another question"))
	if n := f.fake.CachesCreated(); n != 1 || f.streams()[2].CachedContent != cache.Name {
		t.Fatalf("same caller: %d caches, request with %q", n, f.streams()[2].CachedContent)
	}
	d := f.mustRun(filesTurn("token:b", 1500, "another question"))
	if n := f.fake.CachesCreated(); n != 2 || f.streams()[3].CachedContent == cache.Name || f.streams()[3].CachedContent == "" {
		t.Fatalf("another caller: %d caches, request with %q", n, f.streams()[3].CachedContent)
	}
	for _, r := range f.fake.Requests() {
		if r.Status != http.StatusOK {
			t.Errorf("%s answered %d: %s", r.Method, r.Status, r.Answer)
		}
	}

	// The sessions end: the sweep deletes the cache of the one deleted
	// (the one that made it), Close the other.
	ctx := guard(t)
	for _, id := range []string{a.SessionID, c.SessionID, d.SessionID} {
		if _, err := f.hist.Touch(ctx, id, session.Turn{Backend: "api"}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.hist.Delete(ctx, a.SessionID); err != nil {
		t.Fatal(err)
	}
	if n := f.b.res.sweep(ctx, f.b.alive, time.Now().Add(time.Second), nil); n != 1 {
		t.Errorf("the sweep deleted %d, want 1", n)
	}
	if del := f.fake.DeletedCaches(); len(del) != 1 || del[0] != cache.Name {
		t.Errorf("deleted %q, want %q", del, cache.Name)
	}
	// The same caller's conversation goes on: its cache is made again.
	f.mustRun(backend.Turn{Session: c.SessionID, Prompt: "still there?", Owner: "token:a", SystemPrompt: "Review the code."})
	if n := f.fake.CachesCreated(); n != 3 {
		t.Errorf("%d caches created, want 3", n)
	}
	f.b.Close()
	if live := f.fake.Caches(); len(live) != 0 {
		t.Errorf("after Close: %+v", live)
	}
	if del := f.fake.DeletedCaches(); len(del) != 3 {
		t.Errorf("deleted %q, want 3", del)
	}
}

// TestContextCacheNotUnderMinimum: a context under the model's minimum, a
// prompt with no context, or caching turned off: no cache, the whole
// prompt sent.
func TestContextCacheNotUnderMinimum(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.mustRun(filesTurn("", 600, "small"))
	// 1,500 words are enough for Flash, not for Pro (4,096).
	f.mustRun(backend.Turn{Model: "gemini-2.5-pro", Prompt: filesTurn("", 1500, "q").Prompt, ContextLen: filesTurn("", 1500, "q").ContextLen})
	f.mustRun(backend.Turn{Prompt: strings.Repeat("word ", 1500)})
	if n := f.fake.CachesCreated(); n != 0 {
		t.Errorf("%d caches created", n)
	}
	for _, r := range f.fake.Requests() {
		if r.Method != fakeapi.MethodStream && r.Method != fakeapi.MethodListModels && r.Method != fakeapi.MethodCountTokens {
			t.Errorf("request %s", r.Method)
		}
		if r.CachedContent != "" {
			t.Errorf("request with cache %q", r.CachedContent)
		}
	}

	off := newFixture(t, Options{CacheTTL: -1})
	a := off.mustRun(filesTurn("", 1500, "q"))
	if n := off.fake.CachesCreated(); n != 0 || !strings.Contains(string(off.streams()[0].Body), "word word") || a.Usage.CachedTokens != 0 {
		t.Errorf("caching off: %d caches, usage %+v", n, a.Usage)
	}
}

// TestContextCacheExpired: a cache the API dropped between two turns (its
// TTL) costs one refused request: the turn is sent again with a fresh
// cache, and succeeds. Another model in the same conversation gets a cache
// of its own: the API's refusal of a cache of another model is never met.
func TestContextCacheExpired(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(filesTurn("", 5000, "first"))
	first := f.fake.Caches()[0].Name
	f.fake.ExpireCaches()
	b := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "second", SystemPrompt: "Review the code."})
	if !strings.Contains(b.Text, "second") || b.Usage.CachedTokens != 5002 {
		t.Fatalf("answer %q, usage %+v", b.Text, b.Usage)
	}
	s := f.streams()
	if len(s) != 3 || s[1].Status != http.StatusForbidden || s[1].CachedContent != first ||
		s[2].Status != http.StatusOK || s[2].CachedContent == first || s[2].CachedContent == "" {
		t.Fatalf("requests: %+v", s)
	}
	if n := f.fake.CachesCreated(); n != 2 {
		t.Fatalf("%d caches created, want 2", n)
	}

	// The same conversation on Pro: a cache for Pro, none refused.
	f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "third", Model: "gemini-2.5-pro", SystemPrompt: "Review the code."})
	s = f.streams()
	last := s[len(s)-1]
	var models []string
	for _, c := range f.fake.Caches() {
		models = append(models, c.Model)
	}
	if last.Status != http.StatusOK || last.Model != "gemini-2.5-pro" || !slices.Contains(models, "models/gemini-2.5-pro") || f.fake.CachesCreated() != 3 {
		t.Fatalf("on Pro: %d %q, caches of %v", last.Status, last.Model, models)
	}

	// Without the cache in this process (a restart), the conversation is
	// rebuilt from the history and caches anew.
	f.fake.ExpireCaches()
	f.restart(Options{CacheTTL: -1})
	c := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "fourth", SystemPrompt: "Review the code."})
	s = f.streams()
	last = s[len(s)-1]
	if last.CachedContent != "" || !strings.Contains(string(last.Body), "word word") || c.Usage.CachedTokens != 0 || last.NumContents != 7 {
		t.Fatalf("without caches: %d contents, cache %q", last.NumContents, last.CachedContent)
	}
}

// TestContextCacheExtended: a cache used with less than half of its TTL
// left is extended by the TTL (cachedContents.patch) before the request.
func TestContextCacheExtended(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{CacheTTL: time.Hour})
	a := f.mustRun(filesTurn("", 1500, "first"))
	var e *cacheEntry
	f.b.res.mu.Lock()
	for _, r := range f.b.res.bySession[a.SessionID] {
		e, _ = r.value.(*cacheEntry)
	}
	f.b.res.mu.Unlock()
	if e == nil {
		t.Fatal("no cache recorded for the session")
	}
	// More than half left: used as it is.
	f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "second", SystemPrompt: "Review the code."})
	f.b.res.mu.Lock()
	e.expire = time.Now().Add(20 * time.Minute) // as if 40 minutes had passed
	f.b.res.mu.Unlock()
	f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "third", SystemPrompt: "Review the code."})
	var patches int
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodCacheUpdate && r.Status == http.StatusOK {
			patches++
		}
	}
	f.b.res.mu.Lock()
	left := time.Until(e.expire)
	f.b.res.mu.Unlock()
	if patches != 1 || left < 50*time.Minute || f.fake.CachesCreated() != 1 || f.streams()[2].CachedContent != e.name {
		t.Fatalf("%d updates, %s left, %d caches created", patches, left, f.fake.CachesCreated())
	}
}

// TestImplicitCacheUsage: the API's implicit caching, reported on a
// request without a cache, is in the usage too.
func TestImplicitCacheUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "a b c d e f [[implicit-cache:4]]"})
	if a.Usage == nil || a.Usage.CachedTokens != 4 || a.Usage.PromptTokens != 7 || f.streams()[0].CachedContent != "" {
		t.Fatalf("usage %+v", a.Usage)
	}
}

// TestContextCacheRefused: a cache the API refuses to make (its tokens
// fewer than the estimate said) leaves the turn whole, and is not asked
// for again by the session's next turns.
func TestContextCacheRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	// 600 words of 8 bytes: estimated at 1,200 tokens, 602 to the fake.
	files := "## Files\n" + strings.Repeat("abcdefg ", 600) + "\n\n"
	a := f.mustRun(backend.Turn{Prompt: files + "first", ContextLen: len(files), SystemPrompt: "Review the code."})
	f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "second", SystemPrompt: "Review the code."})
	var creates int
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodCacheCreate {
			creates++
			if r.Status != http.StatusBadRequest {
				t.Errorf("create answered %d", r.Status)
			}
		}
	}
	s := f.streams()
	if creates != 1 || len(s) != 2 || s[0].CachedContent != "" || s[1].CachedContent != "" || !strings.Contains(string(s[1].Body), "abcdefg abcdefg") {
		t.Fatalf("%d creates, %d requests", creates, len(s))
	}
}
