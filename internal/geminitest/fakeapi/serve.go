package fakeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	pathRE   = regexp.MustCompile(`^/v1(?:beta|alpha|)/models/([^/:]+):(streamGenerateContent|generateContent|countTokens)$`)
	modelsRE = regexp.MustCompile(`^/v1(?:beta|alpha|)/models$`)
	failRE   = regexp.MustCompile(`\[\[fail:(\d+):(\d{3})\]\]`)
	delayRE  = regexp.MustCompile(`\[\[retry-delay:([0-9.]+s)\]\]`)
	chunksRE = regexp.MustCompile(`\[\[chunks:(\d+)\]\]`)
	bytesRE  = regexp.MustCompile(`\[\[bytes:(\d+)\]\]`)
	finishRE = regexp.MustCompile(`\[\[finish:([A-Z_]+)\]\]`)
	blockRE  = regexp.MustCompile(`\[\[block:([A-Z_]+)\]\]`)
	statusRE = regexp.MustCompile(`\[\[status:(\d{3})\]\]`)
	sleepRE  = regexp.MustCompile(`\[\[sleep:(\d+)\]\]`)
	callRE   = regexp.MustCompile(`(?s)\[\[call:([A-Za-z0-9_.-]+):(\{.*?\})\]\]`)
	thenRE   = regexp.MustCompile(`(?s)\[\[then-call:([A-Za-z0-9_.-]+):(\{.*?\})\]\]`)
	loopRE   = regexp.MustCompile(`(?s)\[\[loop-call:([A-Za-z0-9_.-]+):(\{.*?\})\]\]`)
	bigRE    = regexp.MustCompile(`\[\[big-frame:(\d+)\]\]`)
	floodRE  = regexp.MustCompile(`\[\[call-flood:([A-Za-z0-9_.-]+):(\d+)\]\]`)
	dripRE   = regexp.MustCompile(`\[\[drip:(\d+)\]\]`)
	cutRE    = regexp.MustCompile(`\[\[no-finish(?::(\d+))?\]\]`)
	hitRE    = regexp.MustCompile(`\[\[implicit-cache:(\d+)\]\]`)
	endRE    = regexp.MustCompile(`\[\[finish-text:([A-Z_]+)\]\]`)
	verRE    = regexp.MustCompile(`\[\[model-version:([A-Za-z0-9_./-]+)\]\]`)
)

type part struct {
	Text             string            `json:"text"`
	FunctionResponse *FunctionResponse `json:"functionResponse"`
	FunctionCall     *FunctionCall     `json:"functionCall"`
	ThoughtSignature string            `json:"thoughtSignature"`
	InlineData       *Blob             `json:"inlineData"`
	FileData         *FileData         `json:"fileData"`
}

type content struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

type apiRequest struct {
	CachedContent     string          `json:"cachedContent"`
	SystemInstruction *content        `json:"systemInstruction"`
	Contents          []content       `json:"contents"`
	GenerationConfig  json.RawMessage `json:"generationConfig"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig struct {
		FunctionCallingConfig struct {
			Mode string `json:"mode"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
}

// HasToolConfig says whether the request sets a toolConfig.
func (r *apiRequest) HasToolConfig() bool { return r.ToolConfig.FunctionCallingConfig.Mode != "" }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{Time: time.Now()}
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key != "" && r.Header.Get("X-Goog-Api-Key") != key {
		// The Gemini API's own answer to a bad key: 400, not 401.
		rec.Method = r.Method + " " + r.URL.Path
		s.failWith(w, rec, http.StatusBadRequest, BadKeyMessage, []any{map[string]any{
			"@type":  "type.googleapis.com/google.rpc.ErrorInfo",
			"reason": "API_KEY_INVALID",
			"domain": "googleapis.com",
		}})
		return
	}
	if r.Method == http.MethodGet && modelsRE.MatchString(r.URL.Path) {
		s.listModels(w, r, rec)
		return
	}
	if s.serveFiles(w, r, rec) || s.serveCaches(w, r, rec) || s.serveInteractions(w, r, rec) || s.serveStores(w, r, rec) {
		return
	}
	m := pathRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		rec.Method = r.Method + " " + r.URL.Path
		s.fail(w, rec, http.StatusNotFound, "fakeapi: no such method")
		return
	}
	rec.Model, rec.Method = m[1], m[2]
	if SignsThoughts(rec.Model) {
		w = &signingWriter{ResponseWriter: w, model: rec.Model}
	}
	if r.Method != http.MethodPost {
		rec.Method = r.Method + " " + r.URL.Path
		s.fail(w, rec, http.StatusNotFound, "fakeapi: no such method")
		return
	}
	body, err := io.ReadAll(r.Body)
	rec.Body = body
	if err != nil {
		s.fail(w, rec, http.StatusBadRequest, "fakeapi: read body: "+err.Error())
		return
	}
	if len(body) > InlineRequestLimit {
		// Refused by its size alone, before it is decoded, as the API
		// refuses it.
		s.fail(w, rec, http.StatusBadRequest, PayloadTooLargeMessage)
		return
	}
	var req apiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.fail(w, rec, http.StatusBadRequest, "fakeapi: bad JSON: "+err.Error())
		return
	}
	if s.applyCache(w, &rec, &req) {
		return
	}
	if req.SystemInstruction != nil {
		rec.SystemInstruction = joinParts(req.SystemInstruction.Parts)
	}
	rec.GenerationConfig = req.GenerationConfig
	rec.NumContents = len(req.Contents)
	for _, t := range req.Tools {
		for _, fd := range t.FunctionDeclarations {
			rec.Tools = append(rec.Tools, fd.Name)
		}
	}
	if n := len(req.Contents); n > 0 {
		for _, p := range req.Contents[n-1].Parts {
			if p.FunctionResponse != nil {
				rec.FunctionResponses = append(rec.FunctionResponses, *p.FunctionResponse)
			}
		}
	}
	for i := len(req.Contents) - 1; i >= 0; i-- {
		if req.Contents[i].Role == "user" {
			rec.LastUserText = joinParts(withoutContext(req.Contents[i].Parts))
			break
		}
	}
	rec.ToolMode = req.ToolConfig.FunctionCallingConfig.Mode
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.Role == "user" {
			if text := joinParts(withoutContext(c.Parts)); text != "" {
				rec.Prompt = text
				break
			}
		}
		if c.Role == "model" && len(rec.FunctionResponses) > 0 && slices.ContainsFunc(c.Parts, func(p part) bool { return p.FunctionCall != nil }) {
			rec.Round++
		}
	}

	s.mu.Lock()
	s.arrived = append(s.arrived, rec)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()

	if rec.Method == MethodCountTokens {
		rec.Status = http.StatusOK
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"totalTokens":%d}`, countContents(req.Contents))
		return
	}
	if s.refuseQuota(w, rec) || s.refuseUnsigned(w, rec, req) || s.refuseFiles(w, &rec, req) {
		return
	}
	if rec.Method == MethodGenerate {
		rec.Status, rec.Answer = http.StatusOK, RouterAnswer
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		w.Write(responseJSON(RouterAnswer))
		return
	}

	if s.refuseBuiltins(w, rec) || s.refuseThinkingOff(w, rec) {
		return
	}

	if len(rec.FunctionResponses) > 0 {
		if rec.ToolMode != "NONE" {
			var next *FunctionCall
			if lm := loopRE.FindStringSubmatch(rec.Prompt); lm != nil {
				next = &FunctionCall{Name: lm[1], Args: json.RawMessage(lm[2])}
			} else if tm := thenRE.FindAllStringSubmatch(rec.Prompt, -1); rec.Round >= 1 && rec.Round <= len(tm) {
				next = &FunctionCall{Name: tm[rec.Round-1][1], Args: json.RawMessage(tm[rec.Round-1][2])}
			}
			if next != nil {
				if !json.Valid(next.Args) {
					s.fail(w, rec, http.StatusBadRequest, "fakeapi: [[then-call]] arguments are not a JSON object")
					return
				}
				rec.Status = http.StatusOK
				rec.FunctionCall, rec.FunctionCalls = next, []FunctionCall{*next}
				s.record(rec)
				s.stream(w, functionCallJSON(*next))
				return
			}
		}
		rec.Status = http.StatusOK
		rec.Answer = FunctionResultAnswer(rec.FunctionResponses)
		s.record(rec)
		s.stream(w, responseJSON(rec.Answer))
		return
	}

	if sm := sleepRE.FindStringSubmatch(rec.LastUserText); sm != nil {
		ms, _ := strconv.Atoi(sm[1])
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			rec.Ended = true
		}
	}
	var details []any
	if dm := delayRE.FindStringSubmatch(rec.LastUserText); dm != nil {
		details = append(details, map[string]any{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": dm[1],
		})
	}
	if sm := statusRE.FindStringSubmatch(rec.LastUserText); sm != nil {
		code, _ := strconv.Atoi(sm[1])
		if code != http.StatusOK {
			s.failWith(w, rec, code, ErrorMessage(code), details)
			return
		}
	}
	if fm := failRE.FindStringSubmatch(rec.LastUserText); fm != nil {
		n, _ := strconv.Atoi(fm[1])
		code, _ := strconv.Atoi(fm[2])
		s.mu.Lock()
		k := s.failed[rec.LastUserText]
		if k < n {
			s.failed[rec.LastUserText] = k + 1
		}
		s.mu.Unlock()
		if k < n {
			s.failWith(w, rec, code, ErrorMessage(code), details)
			return
		}
	}
	if bm := blockRE.FindStringSubmatch(rec.LastUserText); bm != nil {
		rec.Status = http.StatusOK
		s.record(rec)
		b, _ := json.Marshal(map[string]any{"promptFeedback": map[string]any{"blockReason": bm[1]}})
		s.stream(w, b)
		return
	}
	if strings.Contains(rec.LastUserText, "[[continuation]]") && !bytes.Contains(body, []byte(`"continuationToken"`)) {
		rec.Status = http.StatusOK
		rec.Answer = Answer(rec.Model, rec.NumContents, rec.SystemInstruction, rec.LastUserText)
		s.record(rec)
		b, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{
			"content":           map[string]any{"role": "model", "parts": []any{map[string]any{"text": rec.Answer}}},
			"finishReason":      "CONTINUATION",
			"continuationToken": "Y29udGludWU=",
			"index":             0,
		}}})
		s.stream(w, b)
		return
	}
	if fm := finishRE.FindStringSubmatch(rec.LastUserText); fm != nil {
		rec.Status = http.StatusOK
		s.record(rec)
		b, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{"finishReason": fm[1], "index": 0}}})
		s.stream(w, b)
		return
	}

	if s.image(w, rec) {
		return
	}
	if s.hostile(w, r, rec) {
		return
	}

	if cms := callRE.FindAllStringSubmatch(rec.LastUserText, -1); cms != nil {
		for _, cm := range cms {
			var args map[string]any
			if err := json.Unmarshal([]byte(cm[2]), &args); err != nil {
				s.fail(w, rec, http.StatusBadRequest, "fakeapi: [[call]] arguments are not a JSON object: "+err.Error())
				return
			}
			rec.FunctionCalls = append(rec.FunctionCalls, FunctionCall{Name: cm[1], Args: json.RawMessage(cm[2])})
		}
		rec.Status = http.StatusOK
		rec.FunctionCall = &rec.FunctionCalls[0]
		s.record(rec)
		s.stream(w, withVersion([][]byte{functionCallJSON(rec.FunctionCalls...)}, rec)...)
		return
	}

	rec.Status = http.StatusOK
	rec.Answer = Answer(rec.Model, rec.NumContents, rec.SystemInstruction, rec.LastUserText)
	if bm := bytesRE.FindStringSubmatch(rec.LastUserText); bm != nil {
		n, _ := strconv.Atoi(bm[1])
		rec.Answer = LongAnswer(rec.Answer, n)
	}
	rec.Answer = structured(rec.Answer, rec)
	usage := map[string]any{"promptTokenCount": countContents(req.Contents), "candidatesTokenCount": CountTokens(rec.Answer)}
	total := countContents(req.Contents) + CountTokens(rec.Answer)
	if wantsThinking(req.GenerationConfig) {
		usage["thoughtsTokenCount"] = ThoughtTokens
		total += ThoughtTokens
	}
	if n := toolUseTokens(rec); n > 0 {
		usage["toolUsePromptTokenCount"] = n
		total += n
	}
	usage["totalTokenCount"] = total
	if rec.CachedContent != "" {
		usage["cachedContentTokenCount"] = rec.CachedTokens
	} else if hm := hitRE.FindStringSubmatch(rec.LastUserText); hm != nil {
		n, _ := strconv.Atoi(hm[1])
		usage["cachedContentTokenCount"] = min(n, countContents(req.Contents))
	}
	n := 1
	if cm := chunksRE.FindStringSubmatch(rec.LastUserText); cm != nil {
		n, _ = strconv.Atoi(cm[1])
	}
	pieces := split(rec.Answer, max(n, 1))
	if strings.Contains(rec.LastUserText, "[[stall]]") {
		// The first piece goes out, then nothing until the client leaves.
		s.stream(w, textJSON(pieces[0], nil))
		<-r.Context().Done()
		rec.Ended = true
		s.record(rec)
		return
	}
	cut := false
	if m := cutRE.FindStringSubmatch(rec.LastUserText); m != nil {
		cut = true
		if m[1] != "" {
			n, _ := strconv.Atoi(m[1])
			s.mu.Lock()
			k := s.failed["no-finish\x00"+rec.LastUserText]
			if cut = k < n; cut {
				s.failed["no-finish\x00"+rec.LastUserText] = k + 1
			}
			s.mu.Unlock()
		}
	}
	s.record(rec)
	frames := make([][]byte, len(pieces))
	for i, p := range pieces {
		var u map[string]any
		if i == len(pieces)-1 {
			u = usage
		}
		frames[i] = textJSON(p, u)
		if u != nil {
			frames[i] = s.withFileSearch(withMetadata(frames[i], rec, rec.Answer), rec, rec.Answer)
		}
		if u != nil && cut {
			// The same last event, without its finishReason.
			var m map[string]any
			_ = json.Unmarshal(frames[i], &m)
			delete(m["candidates"].([]any)[0].(map[string]any), "finishReason")
			frames[i], _ = json.Marshal(m)
		}
		if em := endRE.FindStringSubmatch(rec.LastUserText); u != nil && !cut && em != nil {
			// The same last event, with another finishReason.
			var m map[string]any
			_ = json.Unmarshal(frames[i], &m)
			m["candidates"].([]any)[0].(map[string]any)["finishReason"] = em[1]
			frames[i], _ = json.Marshal(m)
		}
	}
	if cf := codeFrames(rec, frames[len(frames)-1]); cf != nil {
		frames = append(frames[:len(frames)-1:len(frames)-1], cf...)
	}
	s.stream(w, withVersion(withThoughts(frames, rec), rec)...)
}

// withoutContext drops the <session_context> part the CLI puts before the
// first prompt of a session.
func withoutContext(ps []part) []part {
	out := make([]part, 0, len(ps))
	for _, p := range ps {
		if !strings.HasPrefix(p.Text, "<session_context>") {
			out = append(out, p)
		}
	}
	return out
}

func joinParts(ps []part) string {
	texts := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Tokens the Server reports as toolUsePromptTokenCount, for a request that
// offers googleSearch or urlContext (both: their sum): what the API's
// tools fed the model, as real answers report it (a URL context answer
// 4,610 against a prompt of 32).
const (
	SearchToolUseTokens = 87
	URLToolUseTokens    = 4610
)

func toolUseTokens(rec Request) int {
	n := 0
	if rec.GoogleSearch() {
		n += SearchToolUseTokens
	}
	if rec.URLContext() {
		n += URLToolUseTokens
	}
	return n
}

// withVersion puts in each event the modelVersion the API reports: the
// model of the request's path, or the NAME of a [[model-version:NAME]]
// directive.
func withVersion(frames [][]byte, rec Request) [][]byte {
	version := rec.Model
	if vm := verRE.FindStringSubmatch(rec.Prompt); vm != nil {
		version = vm[1]
	}
	out := make([][]byte, len(frames))
	for i, f := range frames {
		var m map[string]any
		if json.Unmarshal(f, &m) != nil {
			out[i] = f
			continue
		}
		m["modelVersion"] = version
		out[i], _ = json.Marshal(m)
	}
	return out
}
