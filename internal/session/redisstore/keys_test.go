package redisstore

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifesttest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/ratelimit"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestKeysAsDocumented: the keys the documentation names (`PREFIX …` in
// docs/*.md, its words in capitals standing for the ids) are the keys the
// store writes, each of them: a session's with its answer page and lease,
// a rate limit's bucket as the rate limiter names it, an OAuth sign-in,
// a live job of a research interaction and a file search manifest with a
// file.
func TestKeysAsDocumented(t *testing.T) {
	const prefix = "p:"
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{Prefix: prefix})
	ctx := t.Context()

	// One value for each word of the docs; CLIENT is both the client of a
	// session's latest turn and a rate limit's caller, so one value.
	id, answer := session.NewUUID(), session.NewUUID()
	job, err := jobs.New("owner-a", "research", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := job.SetResume("interactions-abc", time.Now()); err != nil {
		t.Fatal(err)
	}
	manifestKey := "/work/a\x00token:a"
	words := map[string]string{
		"N": strconv.Itoa(len(job.Owner)), "INTERACTION": job.Resume,
		"ID": id, "ANSWER": answer, "TOKEN": job.Owner, "CLIENT": "token:a", "DIR": "/work/a",
		"TOOL": "analyze", "URL": "https://mcp.example/mcp", "JOB": job.ID, "H": manifestHash(manifestKey),
	}
	if _, err := s.Touch(ctx, id, session.Turn{Cwd: words["DIR"], Owner: words["TOKEN"], Client: words["CLIENT"]}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(ctx, id, turn(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: answer, SessionID: id, Pages: []string{"a", "b"}, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	limiter := ratelimit.NewLimiter(map[string]config.Rate{words["TOOL"]: {N: 2, Per: time.Minute}}, nil)
	limiter.Shared = s
	if ok, _ := limiter.Allow(words["CLIENT"], words["TOOL"]); !ok {
		t.Fatal("the rate limiter refused the first call")
	}
	if err := s.SaveOAuthToken(ctx, words["URL"], "https://issuer.example", []byte(`{"access_token":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateJob(ctx, job, jobs.Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Manifests().SetStore(ctx, manifestKey, "fileSearchStores/s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Manifests().PutFile(ctx, manifestKey, "a.go", manifesttest.Entry(1)); err != nil {
		t.Fatal(err)
	}

	documented := map[string]string{} // key → where the docs name it
	span := regexp.MustCompile("`PREFIX ([^`]+)`")
	word := regexp.MustCompile(`[A-Z]+`)
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("docs/*.md: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range span.FindAllStringSubmatch(string(b), -1) {
			shape := m[1]
			if shape == "sessions" { // the index of earlier versions
				continue
			}
			key := word.ReplaceAllStringFunc(shape, func(w string) string {
				v, ok := words[w]
				if !ok {
					t.Errorf("%s: `PREFIX %s` names %s, which this test has no value for", filepath.Base(f), shape, w)
				}
				return v
			})
			documented[prefix+key] = filepath.Base(f) + ": `PREFIX " + shape + "`"
		}
	}
	keys := plain(t, srv).Keys(ctx, "*").Val()
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := documented[k]; !ok {
			t.Errorf("the store wrote the key %q, which no `PREFIX …` of docs/*.md names", k)
		}
	}
	for k, where := range documented {
		if !slices.Contains(keys, k) {
			t.Errorf("%s is %q here, which the store did not write; its keys: %s", where, k, strings.Join(keys, " "))
		}
	}
}
