package conversation

import (
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// A background turn's output so far: the backend tells the turn's
// observer the answer's text as it streams (backend.TextObserver), and
// the job's reporter keeps the latest and writes its end (the last
// jobs.MaxPartialTailBytes) into the job with the progress it writes
// anyway, at most once every jobReportEvery: the answer's text costs no
// store write of its own.

// textObserver is a turn's progress reporter that also hears the
// answer's text, for partial.
type textObserver struct {
	*progress
	partial func(text string)
}

func (o textObserver) AnswerSoFar(text string) { o.partial(text) }

// observerOf is the observer of a turn reporting to p: p, and when
// partial is set, one that also gives it the answer's text.
func observerOf(p *progress, partial func(text string)) backend.Observer {
	if partial == nil {
		return p
	}
	return textObserver{p, partial}
}

// partialText is the latest answer text a turn reported, and whether
// it was written since.
type partialText struct {
	mu   sync.Mutex
	text string
	// gen counts the texts reported; done is the last one written.
	gen, done int
}

// answerSoFar keeps text as the job's output so far, to be written with
// its next progress. It only keeps a reference: the backend's text is
// not copied, and only its end is ever written.
func (r *jobReporter) answerSoFar(text string) {
	r.partial.mu.Lock()
	r.partial.text = text
	r.partial.gen++
	r.partial.mu.Unlock()
}

// pendingText is a text to write into the job: none when gen is 0.
type pendingText struct {
	text string
	gen  int
}

// take returns the text not yet written, if any.
func (p *partialText) take() pendingText {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen == p.done {
		return pendingText{}
	}
	return pendingText{p.text, p.gen}
}

// written records that t was written: it is not written again unless a
// newer text comes. A write that failed leaves it to the next one.
func (p *partialText) written(t pendingText) {
	p.mu.Lock()
	p.done = max(p.done, t.gen)
	p.mu.Unlock()
}

// put sets t, if any, as j's output so far.
func (t pendingText) put(j *jobs.Job, now time.Time) error {
	if t.gen == 0 {
		return nil
	}
	return j.SetPartialTail(t.text, now)
}
