package fakeapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestListModelsPages(t *testing.T) {
	s := newServer(t)
	var names []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("no end to the pages")
		}
		resp, err := http.Get(s.URL() + "/v1beta/models?pageSize=3&pageToken=" + token)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Models        []Model
			NextPageToken string
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		for _, m := range page.Models {
			names = append(names, m.Name)
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if len(names) != len(DefaultModels()) || names[0] != "models/gemini-2.5-flash" {
		t.Fatalf("listed %v", names)
	}
	s.SetModels([]Model{{Name: "models/only"}})
	resp, body := get(t, s.URL()+"/v1beta/models")
	if resp.StatusCode != 200 || !strings.Contains(body, `"models/only"`) || strings.Contains(body, "gemini") {
		t.Fatalf("after SetModels: %s", body)
	}
	if r := s.Requests()[0]; r.Method != MethodListModels || r.Status != 200 {
		t.Fatalf("recorded %+v", r)
	}
}

func get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestRequireKey(t *testing.T) {
	s := newServer(t)
	s.RequireKey("good")
	resp, body := get(t, s.URL()+"/v1beta/models")
	if resp.StatusCode != 400 || !strings.Contains(body, BadKeyMessage) || !strings.Contains(body, "API_KEY_INVALID") {
		t.Fatalf("without a key: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", s.URL()+"/v1beta/models", nil)
	req.Header.Set("X-Goog-Api-Key", "good")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 200 {
		t.Fatalf("with the key: %d", r2.StatusCode)
	}
}

func TestCountTokens(t *testing.T) {
	s := newServer(t)
	resp, body := post(t, s, "gemini-2.5-flash", MethodCountTokens, reqBody(t, "", "one two three", "four five"))
	// reqBody adds a session context part and a model "ok" between turns.
	want := CountTokens("<session_context>\nThis is the Gemini CLI.\n</session_context>") + 3 + 1 + 2
	var got struct{ TotalTokens int }
	if resp.StatusCode != 200 || json.Unmarshal(body, &got) != nil || got.TotalTokens != want {
		t.Fatalf("status %d, %s; want %d tokens", resp.StatusCode, body, want)
	}
}

func TestFailThenSucceedWithRetryDelay(t *testing.T) {
	s := newServer(t)
	prompt := "[[fail:2:429]] [[retry-delay:0.25s]] hi"
	for i := range 3 {
		resp, body := post(t, s, "m", MethodStream, reqBody(t, "", prompt))
		if i < 2 {
			if resp.StatusCode != 429 || !strings.Contains(string(body), `"retryDelay":"0.25s"`) ||
				!strings.Contains(string(body), "google.rpc.RetryInfo") {
				t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
			}
			continue
		}
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	// Another prompt has its own count.
	if resp, _ := post(t, s, "m", MethodStream, reqBody(t, "", "[[fail:1:503]] other")); resp.StatusCode != 503 {
		t.Fatalf("other prompt: %d", resp.StatusCode)
	}
}

func TestChunksAndUsage(t *testing.T) {
	s := newServer(t)
	body := `{"contents":[{"role":"user","parts":[{"text":"[[chunks:3]] a b"}]}],` +
		`"generationConfig":{"thinkingConfig":{"thinkingBudget":1024}}}`
	_, b := post(t, s, "gemini-x", MethodStream, body)
	var texts []string
	var usage map[string]int
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var r struct {
			Candidates []struct {
				Content struct{ Parts []struct{ Text string } }
			}
			UsageMetadata map[string]int
		}
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, r.Candidates[0].Content.Parts[0].Text)
		if r.UsageMetadata != nil {
			usage = r.UsageMetadata
		}
	}
	answer := Answer("gemini-x", 1, "", "[[chunks:3]] a b")
	if len(texts) != 3 || strings.Join(texts, "") != answer {
		t.Fatalf("chunks %q", texts)
	}
	if usage["promptTokenCount"] != 3 || usage["candidatesTokenCount"] != CountTokens(answer) || usage["thoughtsTokenCount"] != ThoughtTokens {
		t.Fatalf("usage %v", usage)
	}
	if !strings.Contains(string(s.Requests()[0].GenerationConfig), `"thinkingBudget":1024`) {
		t.Fatalf("generationConfig %s", s.Requests()[0].GenerationConfig)
	}
}

func TestFinishAndBlock(t *testing.T) {
	s := newServer(t)
	_, b := post(t, s, "m", MethodStream, reqBody(t, "", "[[finish:SAFETY]]"))
	if !strings.Contains(string(b), `"finishReason":"SAFETY"`) || strings.Contains(string(b), `"text"`) {
		t.Fatalf("finish: %s", b)
	}
	_, b = post(t, s, "m", MethodStream, reqBody(t, "", "[[block:SAFETY]]"))
	if !strings.Contains(string(b), `"promptFeedback":{"blockReason":"SAFETY"}`) || strings.Contains(string(b), "candidates") {
		t.Fatalf("block: %s", b)
	}
}

// TestStallEndsWithClient checks that a stalled stream is recorded, with
// Ended, once its client goes away.
func TestStallEndsWithClient(t *testing.T) {
	s := newServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL()+"/v1beta/models/m:streamGenerateContent?alt=sse",
		strings.NewReader(reqBody(t, "", "[[stall]] [[chunks:2]] wait")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, err := resp.Body.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "fake-api answer") {
		t.Fatalf("first event: %q %v", buf[:n], err)
	}
	if len(s.Requests()) != 0 {
		t.Fatal("a stalled request was recorded before it ended")
	}
	cancel()
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	if err := s.WaitFor(wctx, func(rs []Request) bool { return len(rs) == 1 }); err != nil {
		t.Fatal(err)
	}
	if r := s.Requests()[0]; !r.Ended || r.Status != 200 {
		t.Fatalf("recorded %+v", r)
	}
}

func TestContinuationDirective(t *testing.T) {
	s := newServer(t)
	_, b := post(t, s, "m", MethodStream, reqBody(t, "", "[[continuation]] more"))
	if !strings.Contains(string(b), `"finishReason":"CONTINUATION"`) || !strings.Contains(string(b), `"continuationToken":"Y29udGludWU="`) {
		t.Fatalf("first answer: %s", b)
	}
	body := strings.Replace(reqBody(t, "", "[[continuation]] more"), `"tools"`, `"continuationToken":"Y29udGludWU=","tools"`, 1)
	_, b = post(t, s, "m", MethodStream, body)
	if strings.Contains(string(b), "CONTINUATION") || !strings.Contains(string(b), `"finishReason":"STOP"`) {
		t.Fatalf("answer to the continued request: %s", b)
	}
}
