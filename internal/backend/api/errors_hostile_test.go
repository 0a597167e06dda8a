package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// maxShownAPIError is what a test allows of an error's reason: the API's
// message clipped, and this server's words around it.
const maxShownAPIError = 4 << 10

// Error answers of every malformed shape, and of a megabyte: each fails
// its call at once (no retry for ever, no wait the API names that the call
// cannot afford), with an error of bounded size that keeps no control
// characters, and --fallback-model is asked only for a quota it can read as
// exhausted.
func TestHostileErrorBodies(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("quota \x1b[31m", 100000)
	for name, c := range map[string]struct {
		status int
		body   string
	}{
		"megabyte message": {429, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"` + big + `"}}`},
		"megabyte text":    {503, big},
		"details a string": {429, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"m","details":"x"}}`},
		"details of every wrong kind": {429, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"m","details":[null,1,"x",
			{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[null,"x",{"quotaId":5},{"quotaMetric":["perday"]}]},
			{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-5s"},
			{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"9999999999h"},
			{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":7}]}}`},
		"code of another status": {500, `{"error":{"code":200,"message":"fine","status":"OK"}}`},
		"code a string":          {429, `{"error":{"code":"RESOURCE_EXHAUSTED","message":"m"}}`},
		"code huge":              {429, `{"error":{"code":1e300,"message":"m"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"models":[{"name":"models/gemini-2.5-flash","supportedGenerationMethods":["generateContent"]},`+
						`{"name":"models/gemini-2.5-pro","supportedGenerationMethods":["generateContent"]}]}`)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			}))
			t.Cleanup(srv.Close)
			f := newFixture(t, Options{Model: "gemini-2.5-pro", FallbackModel: "gemini-2.5-flash", Getenv: envAt(srv.URL)})
			ctx, cancel := context.WithTimeout(geminitest.Context(t), 20*time.Second)
			defer cancel()
			_, err := f.b.Run(ctx, backend.Turn{Prompt: "hi"})
			if err == nil {
				t.Fatal("a refused call succeeded")
			}
			if ctx.Err() != nil {
				t.Fatalf("the call waited until its end: %v", err)
			}
			s := err.Error()
			if len(s) > maxShownAPIError || strings.ContainsRune(s, 0x1b) {
				t.Fatalf("an error of %d bytes: %.300q", len(s), s)
			}
		})
	}
}

// An event of the answer that the SDK cannot decode (inline data that is
// not base64, a field of the wrong type) fails the call as an answer that
// could not be read, quoting the decoder's words, not the event: the SDK's
// error holds the whole event, up to the cap of one event.
func TestUndecodableEventBounded(t *testing.T) {
	t.Parallel()
	for name, event := range map[string]string{
		"not base64": `{"candidates":[{"content":{"role":"model","parts":[{"text":"here"},{"inlineData":{"mimeType":"image/png","data":"!!!not base64 ` +
			strings.Repeat("A", 200000) + `"}}]},"finishReason":"STOP"}]}`,
		"wrong type": `{"candidates":[{"content":{"role":"model","parts":[{"text":7}]},"finishReason":"STOP","x":"` + strings.Repeat("A", 200000) + `"}]}`,
		"not JSON":   `{"candidates":[` + strings.Repeat("A", 200000),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"models":[{"name":"models/gemini-2.5-flash","supportedGenerationMethods":["generateContent"]}]}`)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s\n\n", event)
			}))
			t.Cleanup(srv.Close)
			f := newFixture(t, Options{Getenv: envAt(srv.URL)})
			_, err := f.b.Run(geminitest.Context(t), backend.Turn{Prompt: "hi"})
			be := wantKind(t, err, backend.KindBadOutput, 0, "could not be read")
			if s := be.Error(); len(s) > maxShownAPIError || strings.Contains(s, strings.Repeat("A", 100)) {
				t.Fatalf("an error of %d bytes: %.300q", len(s), s)
			}
		})
	}
}

// A model list that cannot be read lets a turn naming its model go on
// unchecked, as before, and the log says so in bounded words, not with
// the list's body (up to 8 MiB) in one line.
func TestUnreadableModelListLoggedBounded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"models":[{"name":7,"x":"`+strings.Repeat("A", 1<<20)+`"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"fine\"}]},\"finishReason\":\"STOP\"}]}\n\n")
	}))
	t.Cleanup(srv.Close)
	var logs geminitest.LockedBuffer
	b, err := New(Options{Getenv: envAt(srv.URL)}, memstore.New(session.Options{}), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	a, err := b.Run(geminitest.Context(t), backend.Turn{Prompt: "hi", Model: "gemini-2.5-flash"})
	if err != nil || a.Text != "fine" {
		t.Fatalf("the turn: %+v %v", a, err)
	}
	if s := logs.String(); !strings.Contains(s, "goes unchecked") || len(s) > 3*maxShownAPIError {
		t.Fatalf("the log, %d bytes: %.500q", len(s), s)
	}
}

// A finish reason the SDK does not know is the API's word: it reaches the
// answer's note and _meta clipped, without control characters; so do the
// model version, a URL's retrieval status and a prompt's block reason.
func TestUnknownFinishReasonBounded(t *testing.T) {
	t.Parallel()
	reason := "NEW\x1b[2J" + strings.Repeat("R", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"models":[{"name":"models/gemini-2.5-flash","supportedGenerationMethods":["generateContent"]},`+
				`{"name":"models/gemini-2.5-flash-blocked","supportedGenerationMethods":["generateContent"]}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		q, _ := json.Marshal(reason)
		if strings.Contains(r.URL.Path, "blocked") {
			fmt.Fprintf(w, "data: {\"promptFeedback\":{\"blockReason\":%s}}\n\n", q)
			return
		}
		fmt.Fprintf(w, "data: {\"modelVersion\":%s,\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"fine\"}]},"+
			"\"urlContextMetadata\":{\"urlMetadata\":[{\"retrievedUrl\":\"https://e.x/\",\"urlRetrievalStatus\":%s}]},\"finishReason\":%s}]}\n\n", q, q, q)
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t, Options{Getenv: envAt(srv.URL)})
	a, err := f.b.Run(geminitest.Context(t), backend.Turn{Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.FinishReason) > 100 || len(a.Incomplete) > maxShownAPIError || strings.ContainsRune(a.FinishReason+a.Incomplete, 0x1b) {
		t.Fatalf("finish reason of %d bytes, note of %d: %.100q", len(a.FinishReason), len(a.Incomplete), a.FinishReason)
	}
	if len(a.Model) > 200 || len(a.URLs) != 1 || len(a.URLs[0].Status) > 100 || strings.ContainsRune(a.Model+a.URLs[0].Status, 0x1b) {
		t.Fatalf("model of %d bytes, URL statuses %d", len(a.Model), len(a.URLs))
	}
	_, err = f.b.Run(geminitest.Context(t), backend.Turn{Prompt: "hi", Model: "gemini-2.5-flash-blocked"})
	if be := wantKind(t, err, backend.KindInput, 0, "blocked the prompt"); len(be.Error()) > maxShownAPIError || strings.ContainsRune(be.Error(), 0x1b) {
		t.Fatalf("a block reason of %d bytes", len(be.Error()))
	}
}

// An error answer whose body claims a code that is not an error status
// (200, or none) is not shown as a refusal "200 OK": the SDK takes the
// code from the body, so the status it claims is not believed. It is
// retried as a failing API is, and the error says what the body claimed.
func TestErrorBodyClaimsNoErrorCode(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ body, says string }{
		"code 200": {`{"error":{"code":200,"message":"fine","status":"OK"}}`, "body claims code 200 OK: fine"},
		"no code":  {`{"error":{"message":"fine"}}`, "body claims code 0: fine"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			streams := 0
			failFirst := 1 // the first request fails, later ones as the subtest says
			fail := func() bool {
				mu.Lock()
				defer mu.Unlock()
				streams++
				return streams <= failFirst
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.Method == http.MethodGet {
					fmt.Fprint(w, `{"models":[{"name":"models/gemini-2.5-flash","supportedGenerationMethods":["generateContent"]}]}`)
					return
				}
				if fail() {
					w.WriteHeader(http.StatusInternalServerError)
					fmt.Fprint(w, c.body)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"recovered\"}]},\"finishReason\":\"STOP\"}]}\n\n")
			}))
			t.Cleanup(srv.Close)
			f := newFixture(t, Options{Getenv: envAt(srv.URL)})
			a, err := f.b.Run(geminitest.Context(t), backend.Turn{Prompt: "hi"})
			if err != nil || a.Text != "recovered" {
				t.Fatalf("a failure once was not retried: %+v %v", a, err)
			}
			mu.Lock()
			streams, failFirst = 0, 1<<30
			mu.Unlock()
			_, err = f.b.Run(geminitest.Context(t), backend.Turn{Prompt: "hi"})
			be := wantKind(t, err, backend.KindAPI, http.StatusBadGateway, "kept failing on retry", c.says)
			if strings.Contains(be.Error(), "refused") {
				t.Fatalf("shown as a refusal: %v", be)
			}
			mu.Lock()
			defer mu.Unlock()
			if streams < 2 {
				t.Fatalf("%d requests: not retried", streams)
			}
		})
	}
}
