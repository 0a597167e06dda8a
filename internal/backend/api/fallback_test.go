package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// newestFlash is the default model with fakeapi.DefaultModels: the newest
// stable Flash model in that list.
const newestFlash = "gemini-2.5-flash"

// streamModels returns the model of each stream request the fake saw.
func (f *fixture) streamModels() []string {
	var out []string
	for _, r := range f.streams() {
		out = append(out, r.Model)
	}
	return out
}

// TestDefaultModelFollowsList: without Options.Model, a turn runs on the
// newest stable Flash model of the list (not a preview, not Flash-Lite),
// and on a newer one once the list names it; the list is read once while
// it is fresh.
func TestDefaultModelFollowsList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "hi"})
	f.mustRun(backend.Turn{Prompt: "again"})
	if a.Model != newestFlash || strings.Join(f.streamModels(), " ") != newestFlash+" "+newestFlash {
		t.Fatalf("answered by %q; asked %v", a.Model, f.streamModels())
	}
	lists := 0
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodListModels {
			lists++
		}
	}
	if lists != 1 {
		t.Fatalf("the model list was read %d times for two turns, want once", lists)
	}
	if n, err := f.b.CountTokens(context.Background(), "count me"); err != nil || n == 0 {
		t.Fatalf("CountTokens on the default: %d, %v", n, err)
	}

	f.restart(Options{ModelsTTL: time.Nanosecond})
	f.fake.SetModels(append(fakeapi.DefaultModels(),
		fakeapi.Model{Name: "models/gemini-3-flash", Methods: []string{"generateContent"}},
		fakeapi.Model{Name: "models/gemini-3.5-flash-preview", Methods: []string{"generateContent"}},
		fakeapi.Model{Name: "models/gemini-3.5-flash-lite", Methods: []string{"generateContent"}}))
	if a := f.mustRun(backend.Turn{Prompt: "newer"}); a.Model != "gemini-3-flash" {
		t.Fatalf("after gemini-3-flash was listed, the default answered as %q", a.Model)
	}
	models, err := f.b.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		if m.Default != (m.Name == "gemini-3-flash") {
			t.Errorf("model %s: Default %v", m.Name, m.Default)
		}
	}
}

// TestDefaultModelWithoutList: with an empty model list the default is the
// last Flash model known; a list without a stable Flash model is a clear
// error, and a turn that names a model still runs.
func TestDefaultModelWithoutList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.fake.SetModels(nil)
	if a := f.mustRun(backend.Turn{Prompt: "hi"}); a.Model != lastKnownFlash {
		t.Fatalf("with no list, the default answered as %q", a.Model)
	}

	f.restart(Options{})
	f.fake.SetModels([]fakeapi.Model{{Name: "models/gemini-2.5-pro"}, {Name: "models/gemini-3-flash-preview"}})
	_, err := f.run(backend.Turn{Prompt: "hi"})
	wantKind(t, err, backend.KindInput, 0, "no --model was given", "newest stable Flash model", "--model")
	wantKind(t, f.b.Check(context.Background()), backend.KindInput, 0, "no --model was given")
	f.mustRun(backend.Turn{Prompt: "hi", Model: "gemini-2.5-pro"})
}

// TestQuotaFallback: a daily quota goes, at once, to the fallback model,
// which the answer names (FallbackFrom the asked one) and the session
// records, so that the next turn without a model asks it.
func TestQuotaFallback(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{FallbackModel: "flash"})
	f.fake.ExhaustQuota("gemini-2.5-pro", &fakeapi.Quota{Daily: true, RetryDelay: "0.01s"})
	a := f.mustRun(backend.Turn{Prompt: "hi", Model: "pro", ThinkingMode: "max"})
	if a.Model != newestFlash || a.FallbackFrom != "gemini-2.5-pro" {
		t.Fatalf("answered by %q, fallback from %q", a.Model, a.FallbackFrom)
	}
	if got := strings.Join(f.streamModels(), " "); got != "gemini-2.5-pro "+newestFlash {
		t.Fatalf("requests went to %s: a daily quota was retried, or the fallback not asked", got)
	}
	// max is a budget the fallback (Flash) cannot take in full: its note
	// is the fallback's.
	if len(a.NotApplied) != 1 || !strings.Contains(a.NotApplied[0], newestFlash) {
		t.Fatalf("notes of the fallback's thinking: %q", a.NotApplied)
	}
	b := f.mustRun(backend.Turn{Prompt: "next", Session: a.SessionID})
	if b.Model != newestFlash || b.FallbackFrom != "" {
		t.Fatalf("the next turn answered by %q (fallback from %q), want the session's model", b.Model, b.FallbackFrom)
	}
}

// TestQuotaFallbackLongDelay: a per-minute quota whose delay is longer
// than the call may wait goes to the fallback; one it can wait is waited
// out and retried on the asked model.
func TestQuotaFallbackLongDelay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{FallbackModel: "gemini-2.5-flash-lite"})
	f.fake.ExhaustQuota("gemini-2.5-pro", &fakeapi.Quota{RetryDelay: "120s"})
	if a := f.mustRun(backend.Turn{Prompt: "hi", Model: "gemini-2.5-pro"}); a.Model != "gemini-2.5-flash-lite" || a.FallbackFrom != "gemini-2.5-pro" {
		t.Fatalf("answered by %q, fallback from %q", a.Model, a.FallbackFrom)
	}

	f.restart(Options{FallbackModel: "gemini-2.5-flash-lite"})
	f.fake.ExhaustQuota("gemini-2.5-pro", &fakeapi.Quota{RetryDelay: "0.02s", Requests: 2})
	a := f.mustRun(backend.Turn{Prompt: "hi", Model: "gemini-2.5-pro"})
	if a.Model != "gemini-2.5-pro" || a.FallbackFrom != "" {
		t.Fatalf("a per-minute limit answered by %q, fallback from %q", a.Model, a.FallbackFrom)
	}
}

// TestQuotaWithoutFallback: without a fallback, an exhausted quota is
// today's error; a fallback that is the asked model, or whose quota is
// exhausted too, gives an error naming both.
func TestQuotaWithoutFallback(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.fake.ExhaustQuota("gemini-2.5-pro", &fakeapi.Quota{Daily: true, RetryDelay: "43s"})
	_, err := f.run(backend.Turn{Prompt: "hi", Model: "gemini-2.5-pro"})
	be := wantKind(t, err, backend.KindAPI, 429, "quota or rate limit is exhausted", fakeapi.QuotaMessage,
		"the API asks to wait 43s")
	if strings.Contains(be.Reason, "fallback") || isExhausted(err) || len(f.streams()) != 1 {
		t.Fatalf("without a fallback: %q after %d requests", be.Reason, len(f.streams()))
	}

	f.restart(Options{FallbackModel: "pro"})
	_, err = f.run(backend.Turn{Prompt: "hi", Model: "gemini-2.5-pro"})
	wantKind(t, err, backend.KindAPI, 429, "quota or rate limit is exhausted")

	f.restart(Options{FallbackModel: "flash"})
	f.fake.ExhaustQuota(newestFlash, &fakeapi.Quota{Daily: true})
	_, err = f.run(backend.Turn{Prompt: "hi", Model: "gemini-2.5-pro"})
	be = wantKind(t, err, backend.KindAPI, 429, "model gemini-2.5-pro: ", "the fallback model flash (--fallback-model) was tried and failed too")
	if strings.Count(be.Reason, "quota or rate limit is exhausted") != 2 || isExhausted(err) {
		t.Fatalf("both exhausted: %q", be.Reason)
	}
}

// TestQuotaAfterToolCalls: a quota exhausted after Gemini's tool calls ran
// does not start the turn again on the fallback model (the tools would run
// twice): the call fails with the asked model's error.
func TestQuotaAfterToolCalls(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, true)
	f := newFixture(t, Options{Tools: h, FallbackModel: "flash-lite"})
	f.fake.ExhaustQuota(newestFlash, &fakeapi.Quota{Daily: true, After: 1})
	_, err := f.b.Run(guard(t), backend.Turn{Prompt: `look [[call:mcp_demo_echo:{"text":"hi"}]]`})
	be := wantKind(t, err, backend.KindAPI, 429, "quota or rate limit is exhausted")
	if strings.Contains(be.Reason, "fallback") || isExhausted(err) {
		t.Fatalf("the error after tool calls: %q", be.Reason)
	}
	if got := strings.Join(f.streamModels(), " "); got != newestFlash+" "+newestFlash {
		t.Fatalf("requests went to %s", got)
	}
	if len(h.calls) != 1 {
		t.Fatalf("the tool ran %d times", len(h.calls))
	}
}

// TestFallbackLabelsFromList: the fallback metric's model labels are the
// model list's names; any other name, or any before the list is read, is
// "other".
func TestFallbackLabelsFromList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	if got := f.b.models.listed("gemini-2.5-pro"); got != "other" {
		t.Fatalf("before the list was read: %q", got)
	}
	f.mustRun(backend.Turn{Prompt: "hi"})
	for name, want := range map[string]string{"gemini-2.5-pro": "gemini-2.5-pro", newestFlash: newestFlash, "gemini-made-up": "other", `x"y`: "other"} {
		if got := f.b.models.listed(name); got != want {
			t.Errorf("listed(%q) = %q, want %q", name, got, want)
		}
	}
}
