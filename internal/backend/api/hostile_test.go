package api

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestMalformedFrameFailsOneCall sends {"candidates":[null]}, on which the
// Go SDK (v1.77.0) panics while converting the frame: the call fails with
// a clear error, changes nothing, and the next call is answered.
func TestMalformedFrameFailsOneCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "first"})
	_, err := f.run(backend.Turn{Prompt: "[[null-candidate]] second", Session: a.SessionID})
	wantKind(t, err, backend.KindBadOutput, 0, "could not be read")
	if n := f.turns(a.SessionID); n != 1 {
		t.Fatalf("the failed turn left %d turns, want 1", n)
	}
	f.mustRun(backend.Turn{Prompt: "third", Session: a.SessionID})
}

// TestFrameCap: one event past MaxFrameBytes ends the call before the SDK
// reads it whole.
func TestFrameCap(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.run(backend.Turn{Prompt: "[[big-frame:" + itoa(MaxFrameBytes+1000) + "]]"})
	wantKind(t, err, backend.KindOutputTooBig, 0, "one event of its stream", "MiB")
	if n := f.hist.appends.Load(); n != 0 {
		t.Fatalf("a refused answer left %d turns", n)
	}
	// A large event within the cap passes.
	f.mustRun(backend.Turn{Prompt: "[[big-frame:1000000]]"})
}

// TestCallFloodCapped: an answer that keeps asking for function calls is
// stopped at MaxCallsPerAnswer, long before the fake has sent its bytes.
func TestCallFloodCapped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.run(backend.Turn{Prompt: "[[call-flood:nosuch:268435456]]"})
	wantKind(t, err, backend.KindOutputTooBig, 0, "function calls")
	r := waitEnded(t, f.fake)
	if r.Sent >= 16<<20 {
		t.Fatalf("the fake sent %d bytes before the call ended", r.Sent)
	}
}

// TestAnswerBytesCountEveryPart: function call parts count against
// MaxOutputBytes, not only text.
func TestAnswerBytesCountEveryPart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxOutputBytes: 20000})
	_, err := f.run(backend.Turn{Prompt: "[[call-flood:nosuch:67108864]]"})
	wantKind(t, err, backend.KindOutputTooBig, 0, "past 20000 bytes")
	// What the fake could write before the cut: the socket buffers.
	if r := waitEnded(t, f.fake); r.Sent >= 16<<20 {
		t.Fatalf("the fake sent %d bytes before the call ended", r.Sent)
	}
}

// TestTimeoutCutsStreamingPeer: a peer that keeps streaming (slowly, so
// that no byte cap is reached) is cut at --timeout, with a timeout error.
func TestTimeoutCutsStreamingPeer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Timeout: 500 * time.Millisecond})
	ctx := guard(t)
	_, err := f.b.Run(ctx, backend.Turn{Prompt: "[[drip:5]]"})
	be := wantKind(t, err, backend.KindTimeout, 0, "within 500ms")
	if !errors.Is(be, context.DeadlineExceeded) {
		t.Fatal("the error does not match context.DeadlineExceeded")
	}
	if r := waitEnded(t, f.fake); !r.Ended {
		t.Fatal("the stream was not cut")
	}
}

// TestStreamWithoutFinishIsIncomplete: a stream closed cleanly with no
// finish reason gives its text marked incomplete, and the turn is not
// recorded.
func TestStreamWithoutFinishIsIncomplete(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a, err := f.run(backend.Turn{Prompt: "[[no-finish]] [[chunks:3]] new"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Incomplete == "" || !strings.Contains(a.Incomplete, "finish reason") || a.SessionID != "" {
		t.Fatalf("a cut first answer: incomplete %q, session %q", a.Incomplete, a.SessionID)
	}
	if n := f.hist.appends.Load(); n != 0 {
		t.Fatalf("the cut answer was recorded (%d turns)", n)
	}
	if n := len(f.streams()); n != 2 {
		t.Fatalf("%d requests for a cut answer, want 2 (one more try)", n)
	}
	b := f.mustRun(backend.Turn{Prompt: "first"})
	c, err := f.run(backend.Turn{Prompt: "[[no-finish]] reply", Session: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if c.Incomplete == "" || c.SessionID != b.SessionID || c.Text == "" {
		t.Fatalf("a cut reply: %+v", c)
	}
	if n := f.turns(b.SessionID); n != 1 {
		t.Fatalf("the session has %d turns after a cut reply, want 1", n)
	}
	d := f.mustRun(backend.Turn{Prompt: "next", Session: b.SessionID})
	if d.Incomplete != "" {
		t.Fatalf("a whole answer marked incomplete: %q", d.Incomplete)
	}
	if r := f.streams(); r[len(r)-1].NumContents != 3 {
		t.Fatalf("the turn after a cut reply sent %d contents, want 3", r[len(r)-1].NumContents)
	}
}

// TestCutStreamAskedAgain: a stream cut once is asked for again, and the
// whole second answer is given and recorded.
func TestCutStreamAskedAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "[[no-finish:1]] once"})
	if a.Incomplete != "" || a.SessionID == "" || f.turns(a.SessionID) != 1 || len(f.streams()) != 2 {
		t.Fatalf("answer %+v after %d requests", a, len(f.streams()))
	}
}

// waitEnded waits for the last stream request to be recorded.
func waitEnded(t *testing.T, s *fakeapi.Server) fakeapi.Request {
	t.Helper()
	var got fakeapi.Request
	err := s.WaitFor(guard(t), func(rs []fakeapi.Request) bool {
		for i := len(rs) - 1; i >= 0; i-- {
			if rs[i].Method == fakeapi.MethodStream && (rs[i].Sent > 0 || rs[i].Ended) {
				got = rs[i]
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSSEBodyFraming: events split at "\n\n" or "\r\n\r\n", however the
// bytes arrive, go on to the SDK each ended by "\n\n"; an event past
// MaxFrameBytes is an error.
func TestSSEBodyFraming(t *testing.T) {
	t.Parallel()
	in := "data: {\"a\":1}\r\n\r\ndata: {\"b\":\n2}\n\ndata: {\"c\":3}"
	got, err := io.ReadAll(&sseBody{rc: io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), ctx: context.Background()})
	if want := "data: {\"a\":1}\n\ndata: {\"b\":\n2}\n\ndata: {\"c\":3}"; err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
	big := strings.Repeat("x", MaxFrameBytes+1)
	_, err = io.ReadAll(&sseBody{rc: io.NopCloser(strings.NewReader("data: {}\n\ndata: " + big)), ctx: context.Background()})
	wantKind(t, err, backend.KindOutputTooBig, 0, "one event")
	b := &budget{limit: 10}
	_, err = io.ReadAll(&sseBody{rc: io.NopCloser(strings.NewReader("data: {}\n\ndata: {}\n\n")), ctx: context.Background(), budget: b})
	wantKind(t, err, backend.KindOutputTooBig, 0, "past 10 bytes")
}

// TestCallsPerTurnCapped: a model that calls one function per round, round
// after round, is stopped at MaxCallsPerTurn even when the rounds allowed
// are more.
func TestCallsPerTurnCapped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxToolRounds: 2 * MaxCallsPerTurn})
	_, err := f.run(backend.Turn{Prompt: "[[call:nosuch:{}]] [[loop-call:nosuch:{}]]"})
	wantKind(t, err, backend.KindOutputTooBig, 0, "function calls in one turn")
	if n := len(f.streams()); n != MaxCallsPerTurn+1 {
		t.Fatalf("%d requests, want %d", n, MaxCallsPerTurn+1)
	}
}
