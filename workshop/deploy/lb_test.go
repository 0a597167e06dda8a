//go:build unix

package deploy_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

func TestHAProxy(t *testing.T) {
	t.Parallel()
	runScenarios(t, startHAProxy(t, "haproxy.cfg", "stateless"))
}

func TestNginx(t *testing.T) {
	t.Parallel()
	runScenarios(t, startNginx(t))
}

func runScenarios(t *testing.T, top *topology) {
	top.t = t
	for _, sc := range []struct {
		name string
		run  func(*topology)
	}{
		{"Spread", spread},
		{"Load", load},
		{"Progress", progress},
		{"Kill", kill},
		{"RollingRestart", rollingRestart},
	} {
		if !t.Run(sc.name, func(t *testing.T) {
			prev := top.t
			top.t = t
			defer func() { top.t = prev }()
			sc.run(top)
		}) {
			return
		}
	}
}

// spread: chat on one replica, chat-reply and chat-page on others, round
// robin, with one client: the replica that continues the session sends
// Gemini the turns another one ran, and another serves the pages of an
// answer it did not write.
func spread(top *topology) {
	t := top.t
	c := top.client(nil)
	first := c.mustCall("chat", map[string]any{"prompt": "spread: first turn"})
	id, _ := first.Meta["sessionId"].(string)
	if id == "" {
		t.Fatalf("chat: no sessionId in %+v", first.Meta)
	}
	long := c.mustCall("chat-reply", map[string]any{"prompt": "[[bytes:3500]] spread: second turn", "sessionId": id})
	answerID, _ := long.Meta["answerId"].(string)
	pages, _ := long.Meta["pages"].(float64)
	if answerID == "" || pages < 3 {
		t.Fatalf("a 3,500-byte answer at --max-answer-bytes 1000 was not paged: %+v", long.Meta)
	}
	whole := answer(long)
	for p := 2; p <= int(pages); p++ {
		whole += answer(c.mustCall("chat-page", map[string]any{"answerId": answerID, "page": p}))
	}

	calls := c.rec.calls()
	var chatOn, replyOn int
	pagesOn := map[int]bool{}
	for _, s := range calls {
		switch s.tool {
		case "chat":
			chatOn = s.replica
		case "chat-reply":
			replyOn = s.replica
		case "chat-page":
			pagesOn[s.replica] = true
		}
		t.Logf("%s %q: replica %d", s.tool, s.label, s.replica)
	}
	if chatOn == 0 || replyOn == 0 || chatOn == replyOn {
		t.Fatalf("chat on replica %d, chat-reply on %d: want two replicas (round robin)", chatOn, replyOn)
	}
	delete(pagesOn, replyOn)
	if len(pagesOn) == 0 {
		t.Errorf("every chat-page was served by replica %d, which wrote the answer", replyOn)
	}

	// The replicas' own records agree with the balancer's header.
	r, req := top.waitStream("spread: second turn")
	if r.n != replyOn {
		t.Errorf("X-Served-By says replica %d ran chat-reply, its turn reached replica %d's Gemini", replyOn, r.n)
	}
	if req.NumContents != 3 {
		t.Errorf("chat-reply's request has %d contents, want 3 (chat's turn, its answer, the reply)", req.NumContents)
	}
	if m := missing(req, "spread: first turn", answer(first)); len(m) > 0 {
		t.Errorf("the replica continuing the session did not send %q", m)
	}
	for _, n := range []int{chatOn, replyOn} {
		if !strings.Contains(top.replicas[n-1].logs(), "session="+id) {
			t.Errorf("replica %d's log does not name session %s:\n%s", n, id, top.replicas[n-1].logs())
		}
	}
	for _, x := range r.fake.Requests() {
		if strings.Contains(x.LastUserText, "spread: second turn") && x.Answer != whole {
			t.Errorf("the first page and the other replicas' pages make %d bytes, want the %d of the answer", len(whole), len(x.Answer))
		}
	}
}

// load: several clients at once, each with a session of several turns:
// every call answers, every replica serves some, and each session's last
// turn carries all of its earlier ones.
func load(top *topology) {
	t := top.t
	const clients, turns = 6, 4
	var wg sync.WaitGroup
	perReplica := make([]atomic.Int64, 4)
	for k := range clients {
		c := top.client(nil)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			var id string
			var prompts []string
			for n := range turns {
				prompt := fmt.Sprintf("load: client %d turn %d", k, n)
				args := map[string]any{"prompt": prompt}
				tool := "chat"
				if n > 0 {
					tool = "chat-reply"
					args["sessionId"] = id
				}
				res, err := c.call(ctx, tool, args, false)
				if err != nil {
					t.Errorf("client %d: %s: %v", k, tool, err)
					return
				}
				id, _ = res.Meta["sessionId"].(string)
				prompts = append(prompts, prompt, answer(res))
			}
			for _, s := range c.rec.calls() {
				perReplica[s.replica].Add(1)
			}
			_, req := top.waitStream(fmt.Sprintf("load: client %d turn %d", k, turns-1))
			if want := 2*turns - 1; req.NumContents != want {
				t.Errorf("client %d: the last turn has %d contents, want %d", k, req.NumContents, want)
			}
			if m := missing(req, prompts[:len(prompts)-1]...); len(m) > 0 {
				t.Errorf("client %d: the last turn lacks %q", k, m)
			}
		})
	}
	wg.Wait()
	for n := 1; n <= 3; n++ {
		t.Logf("replica %d served %d of the %d calls", n, perReplica[n].Load(), clients*turns)
		if perReplica[n].Load() == 0 {
			t.Errorf("replica %d served no call", n)
		}
	}
	if perReplica[0].Load() != 0 {
		t.Errorf("%d calls were answered without naming a replica", perReplica[0].Load())
	}
}

// progress: the progress of a long call arrives through the balancer while
// the call runs, not in one burst at its end. The call's Gemini stream
// stalls until its client goes away, so every notification received came
// before any result could; then the client cancels, and the replica drops
// the call (the fake API sees its client go).
func progress(top *topology) {
	t := top.t
	got := make(chan *mcp.ProgressNotificationParams, 100)
	c := top.client(func(p *mcp.ProgressNotificationParams) {
		select {
		case got <- p:
		default:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.call(ctx, "chat", map[string]any{"prompt": "[[stall]] progress: a long call"}, true)
		done <- err
	}()
	r, _ := top.waitStream("progress: a long call")
	guardCtx := waitCtx(t)
	var last float64
	for i := range 3 {
		select {
		case p := <-got:
			if p.Progress <= last {
				t.Errorf("progress %d: %v after %v, want it to grow", i, p.Progress, last)
			}
			last = p.Progress
			t.Logf("progress %d: %v %q", i, p.Progress, p.Message)
		case err := <-done:
			t.Fatalf("the call ended (%v) before three progress notifications arrived", err)
		case <-guardCtx.Done():
			t.Fatal("no progress arrived through the balancer while the call ran")
		}
	}
	select {
	case err := <-done:
		t.Fatalf("a stalled call ended on its own: %v", err)
	default:
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call answered")
	}
	err := r.fake.WaitFor(guardCtx, func(rs []fakeapi.Request) bool {
		for _, x := range rs {
			if strings.Contains(x.LastUserText, "progress: a long call") && x.Ended {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Errorf("replica %d did not drop the cancelled call's Gemini stream: %v", r.n, err)
	}
}

// kill: a replica killed with SIGKILL mid-call. The client gets an error
// and calls again; the retry continues the session on another replica,
// with every turn that had been answered.
func kill(top *topology) {
	t := top.t
	c := top.client(nil)
	first := c.mustCall("chat", map[string]any{"prompt": "kill: first turn"})
	id, _ := first.Meta["sessionId"].(string)
	second := c.mustCall("chat-reply", map[string]any{"prompt": "kill: second turn", "sessionId": id})

	done := make(chan error, 1)
	go func() {
		_, err := c.call(context.Background(), "chat-reply", map[string]any{"prompt": "[[stall]] kill: third turn", "sessionId": id}, false)
		done <- err
	}()
	victim, _ := top.waitStream("kill: third turn")
	victim.stop(t, syscall.SIGKILL)
	err := <-done
	if err == nil {
		t.Fatal("the call on the killed replica answered")
	}
	t.Logf("the client's error when replica %d was killed: %v", victim.n, err)

	// The client calls again, as a client that got an error does.
	if err := c.connect(); err != nil {
		t.Fatal(err)
	}
	c.mustCall("chat-reply", map[string]any{"prompt": "kill: third turn, again", "sessionId": id})
	r, req := top.waitStream("kill: third turn, again")
	if r == victim {
		t.Fatalf("the retry reached the killed replica %d", r.n)
	}
	if req.NumContents != 5 {
		t.Errorf("the retry on replica %d sent %d contents, want 5 (two turns, their answers, the retry)", r.n, req.NumContents)
	}
	if m := missing(req, "kill: first turn", answer(first), "kill: second turn", answer(second)); len(m) > 0 {
		t.Errorf("the retry on replica %d lost %q", r.n, m)
	}

	victim.start(t)
	top.waitUp(victim)
}

// rollingRestart: clients keep calling while each replica in turn gets
// SIGTERM mid-call and starts again. A call that fails is called again on
// a new connection (at most five times); none may be lost: each session's
// last turn carries every answered one.
func rollingRestart(top *topology) {
	t := top.t
	const clients, maxTries = 4, 5
	var made, failed, retried, lost atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	type session struct {
		id       string
		answered []string // prompts and answers, in order
		last     string
	}
	sessions := make([]*session, clients)
	for k := range clients {
		c := top.client(nil)
		s := &session{}
		sessions[k] = s
		wg.Go(func() {
			for n := 0; ; n++ {
				if n > 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
				prompt := fmt.Sprintf("roll: client %d turn %d [[sleep:200]]", k, n)
				args := map[string]any{"prompt": prompt}
				tool := "chat"
				if n > 0 {
					tool = "chat-reply"
					args["sessionId"] = s.id
				}
				var res *mcp.CallToolResult
				var err error
				for try := range maxTries {
					if try > 0 {
						retried.Add(1)
						if cerr := c.connect(); cerr != nil {
							err = cerr
							continue
						}
					}
					made.Add(1)
					ctx, cancel := context.WithTimeout(context.Background(), guard)
					res, err = c.call(ctx, tool, args, false)
					cancel()
					if err == nil {
						break
					}
					failed.Add(1)
					t.Logf("client %d turn %d, try %d: %v", k, n, try+1, err)
				}
				if err != nil {
					lost.Add(1)
					t.Errorf("client %d: %s %q failed %d times: %v", k, tool, prompt, maxTries, err)
					return
				}
				if n == 0 {
					s.id, _ = res.Meta["sessionId"].(string)
				}
				s.answered = append(s.answered, prompt, answer(res))
				s.last = prompt
			}
		})
	}

	for _, r := range top.replicas {
		// Wait for a call on r, then stop it with SIGTERM mid-call.
		before := len(r.fake.Arrived())
		ctx := waitCtx(t)
		if err := r.fake.WaitArrived(ctx, func(rs []fakeapi.Request) bool { return len(rs) > before }); err != nil {
			t.Fatalf("replica %d got no call: %v", r.n, err)
		}
		r.stop(t, syscall.SIGTERM)
		r.start(t)
		top.waitUp(r)
		// Back in rotation before the next one stops.
		before = len(r.fake.Arrived())
		if err := r.fake.WaitArrived(ctx, func(rs []fakeapi.Request) bool { return len(rs) > before }); err != nil {
			t.Fatalf("replica %d got no call after its restart: %v", r.n, err)
		}
	}
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}

	// Every answered turn is in its session.
	c := top.client(nil)
	var turns int
	for k, s := range sessions {
		turns += len(s.answered) / 2
		prompt := fmt.Sprintf("roll: client %d, the check", k)
		c.mustCall("chat-reply", map[string]any{"prompt": prompt, "sessionId": s.id})
		_, req := top.waitStream(prompt)
		if m := missing(req, s.answered...); len(m) > 0 {
			lost.Add(int64(len(m) / 2))
			t.Errorf("client %d: the session lost %q", k, m)
		}
		if want := len(s.answered) + 1; req.NumContents != want {
			t.Errorf("client %d: the session has %d contents, want %d (no turn twice, none lost)", k, req.NumContents, want)
		}
	}
	t.Logf("rolling restart through %s: %d turns answered, %d calls made, %d failed, %d retried, %d lost",
		top.kind, turns, made.Load(), failed.Load(), retried.Load(), lost.Load())
	if lost.Load() != 0 {
		t.Errorf("%d calls lost", lost.Load())
	}
}
