package fakeapi

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"
)

// words is n words of text.
func words(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestCachesThroughSDK(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s.SetCacheClock(clock.now)
	c := sdkClient(t, s)
	ctx := testCtx(t)

	cc, err := c.Caches.Create(ctx, "gemini-2.5-flash", &genai.CreateCachedContentConfig{
		DisplayName:       "ctx",
		TTL:               10 * time.Minute,
		SystemInstruction: genai.NewContentFromText("Be a reviewer.", genai.RoleUser),
		Contents:          []*genai.Content{genai.NewContentFromText(words(1500), genai.RoleUser)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cc.Name, "cachedContents/") || cc.Model != "models/gemini-2.5-flash" || cc.DisplayName != "ctx" {
		t.Fatalf("created %+v", cc)
	}
	if cc.UsageMetadata == nil || cc.UsageMetadata.TotalTokenCount != 1500 {
		t.Fatalf("usage %+v, want 1500 tokens", cc.UsageMetadata)
	}
	if want := clock.now().Add(10 * time.Minute); !cc.ExpireTime.Equal(want) {
		t.Fatalf("expireTime %v, want %v", cc.ExpireTime, want)
	}

	got, err := c.Caches.Get(ctx, cc.Name, nil)
	if err != nil || got.Name != cc.Name || !got.ExpireTime.Equal(cc.ExpireTime) {
		t.Fatalf("get: %+v, %v", got, err)
	}

	// A request with the cache: its contents come after the cache's, the
	// usage counts both, the cached part apart.
	resp, err := c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("one two three"), &genai.GenerateContentConfig{CachedContent: cc.Name})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp
	var stream *genai.GenerateContentResponse
	for r, err := range c.Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text("one two three"), &genai.GenerateContentConfig{CachedContent: cc.Name}) {
		if err != nil {
			t.Fatal(err)
		}
		stream = r
	}
	u := stream.UsageMetadata
	if u == nil || u.PromptTokenCount != 1503 || u.CachedContentTokenCount != 1500 {
		t.Fatalf("usage %+v, want promptTokenCount 1503 with cachedContentTokenCount 1500", u)
	}
	last := s.Requests()[len(s.Requests())-1]
	if last.CachedContent != cc.Name || last.SystemInstruction != "Be a reviewer." || last.NumContents != 2 || last.Prompt != "one two three" {
		t.Fatalf("request seen as %+v", last)
	}

	// Another model: refused, as the API refuses it.
	_, err = streamParts(t, c, "gemini-2.5-pro", genai.Text("hi"), &genai.GenerateContentConfig{CachedContent: cc.Name})
	if code, m := apiCode(err); code != http.StatusBadRequest || !strings.Contains(m, "has to be the same") {
		t.Fatalf("another model: %d %q", code, m)
	}
	// A system instruction beside the cache: refused.
	_, err = streamParts(t, c, "gemini-2.5-flash", genai.Text("hi"), &genai.GenerateContentConfig{CachedContent: cc.Name,
		SystemInstruction: genai.NewContentFromText("x", genai.RoleUser)})
	if code, m := apiCode(err); code != http.StatusBadRequest || m != CacheWithSystemMessage {
		t.Fatalf("system instruction with a cache: %d %q", code, m)
	}

	// The TTL moved by an update, then reached.
	clock.add(9 * time.Minute)
	up, err := c.Caches.Update(ctx, cc.Name, &genai.UpdateCachedContentConfig{TTL: 10 * time.Minute})
	if err != nil || !up.ExpireTime.Equal(clock.now().Add(10*time.Minute)) {
		t.Fatalf("update: %+v, %v", up, err)
	}
	clock.add(9 * time.Minute)
	if _, err := c.Caches.Get(ctx, cc.Name, nil); err != nil {
		t.Fatalf("get before the new expiry: %v", err)
	}
	clock.add(2 * time.Minute)
	if _, err := c.Caches.Get(ctx, cc.Name, nil); err == nil {
		t.Fatal("an expired cache was answered")
	} else if code, m := apiCode(err); code != http.StatusForbidden || m != CacheNotFoundMessage {
		t.Fatalf("expired: %d %q", code, m)
	}
	_, err = streamParts(t, c, "gemini-2.5-flash", genai.Text("hi"), &genai.GenerateContentConfig{CachedContent: cc.Name})
	if code, _ := apiCode(err); code != http.StatusForbidden {
		t.Fatalf("a request with an expired cache: %v", err)
	}
	if len(s.Caches()) != 0 {
		t.Fatalf("caches held: %+v", s.Caches())
	}
}

func TestCacheDeleteAndMinimum(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	c := sdkClient(t, s)
	ctx := testCtx(t)

	_, err := c.Caches.Create(ctx, "gemini-2.5-flash", &genai.CreateCachedContentConfig{
		Contents: []*genai.Content{genai.NewContentFromText(words(1023), genai.RoleUser)}})
	if code, m := apiCode(err); code != http.StatusBadRequest || m != CacheTooSmallMessage(1023, 1024) {
		t.Fatalf("under Flash's minimum: %d %q", code, m)
	}
	_, err = c.Caches.Create(ctx, "gemini-2.5-pro", &genai.CreateCachedContentConfig{
		Contents: []*genai.Content{genai.NewContentFromText(words(2000), genai.RoleUser)}})
	if code, _ := apiCode(err); code != http.StatusBadRequest {
		t.Fatalf("under Pro's minimum: %v", err)
	}
	cc, err := c.Caches.Create(ctx, "gemini-2.5-flash", &genai.CreateCachedContentConfig{
		Contents: []*genai.Content{genai.NewContentFromText(words(1024), genai.RoleUser)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Caches.Delete(ctx, cc.Name, nil); err != nil {
		t.Fatal(err)
	}
	if d := s.DeletedCaches(); len(d) != 1 || d[0] != cc.Name {
		t.Fatalf("deleted %v", d)
	}
	if _, err := c.Caches.Get(ctx, cc.Name, nil); err == nil {
		t.Fatal("a deleted cache was answered")
	}
	if _, err := c.Caches.Delete(ctx, cc.Name, nil); err == nil {
		t.Fatal("a deleted cache was deleted again")
	}
	if s.CachesCreated() != 1 {
		t.Fatalf("created %d", s.CachesCreated())
	}
}
