package trace

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// Kind is a span's OTLP SpanKind.
type Kind int

// The kinds this server's spans have (OTLP's numbering).
const (
	Internal Kind = 1
	Server   Kind = 2
	Client   Kind = 3
)

// Sampler decides whether a new trace, or a child of a remote parent, is
// recorded. See ParseSampler for the ones OTEL_TRACES_SAMPLER names.
type Sampler struct {
	// ParentBased follows a remote parent's sampled flag when there is one.
	ParentBased bool
	// Ratio is the share of root traces recorded: 1 always, 0 never.
	Ratio float64
}

func (s Sampler) sample(parent SpanContext, id ID) bool {
	if s.ParentBased && parent.IsValid() {
		return parent.Sampled
	}
	switch {
	case s.Ratio >= 1:
		return true
	case s.Ratio <= 0:
		return false
	}
	// The TraceIdRatioBased rule: the trace id's low 8 bytes against the
	// ratio's share of the range, so that every service decides alike.
	return binary.BigEndian.Uint64(id[8:])>>1 < uint64(s.Ratio*(1<<63))
}

// Attr is one span attribute: a string or an int64.
type Attr struct {
	Key   string
	Str   string
	Int   int64
	IsInt bool
}

// String and Int make attributes.
func String(k, v string) Attr { return Attr{Key: k, Str: v} }

// Int makes an integer attribute.
func Int(k string, v int64) Attr { return Attr{Key: k, Int: v, IsInt: true} }

// maxAttrs caps the attributes of one span, maxValue one string value.
const (
	maxAttrs = 32
	maxValue = 1024
)

// Tracer makes spans and hands them, ended, to its exporter. A nil
// *Tracer makes no spans.
type Tracer struct {
	sampler Sampler
	exp     *Exporter
	now     func() time.Time
}

// New returns a Tracer exporting through exp.
func New(exp *Exporter, s Sampler) *Tracer {
	return &Tracer{sampler: s, exp: exp, now: time.Now}
}

// Span is one recorded operation. A nil *Span records nothing: every
// method is a no-op on it, so callers need no checks.
type Span struct {
	tr     *Tracer
	sc     SpanContext
	parent SpanID
	name   string
	kind   Kind
	start  time.Time

	mu     sync.Mutex
	end    time.Time
	attrs  []Attr
	errMsg string
	failed bool
	ended  bool
}

type spanKey struct{}

// FromContext is the span ctx carries, nil when none.
func FromContext(ctx context.Context) *Span {
	s, _ := ctx.Value(spanKey{}).(*Span)
	return s
}

// StartServer starts a span of an incoming request whose remote parent is
// parent (the zero SpanContext when it gave none, or none valid). It
// returns ctx unchanged and a nil span when t is nil or the sampler does
// not record it.
func (t *Tracer) StartServer(ctx context.Context, name string, parent SpanContext) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	s := &Span{tr: t, name: name, kind: Server, start: t.now()}
	if parent.IsValid() {
		s.sc.TraceID = parent.TraceID
		s.sc.State = cleanTracestate(parent.State)
		s.parent = parent.SpanID
	} else {
		s.sc.TraceID = newTraceID()
	}
	if !t.sampler.sample(parent, s.sc.TraceID) {
		return ctx, nil
	}
	s.sc.SpanID = newSpanID()
	s.sc.Sampled = true
	return context.WithValue(ctx, spanKey{}, s), s
}

// Start starts a child of the span ctx carries; without one (tracing off,
// or the request not sampled) it returns ctx and a nil span at the cost
// of a context lookup.
func Start(ctx context.Context, name string, kind Kind) (context.Context, *Span) {
	p := FromContext(ctx)
	if p == nil {
		return ctx, nil
	}
	s := &Span{tr: p.tr, name: name, kind: kind, start: p.tr.now(), parent: p.sc.SpanID,
		sc: SpanContext{TraceID: p.sc.TraceID, SpanID: newSpanID(), Sampled: true, State: p.sc.State}}
	return context.WithValue(ctx, spanKey{}, s), s
}

// Context is s's span context (zero for a nil span).
func (s *Span) Context() SpanContext {
	if s == nil {
		return SpanContext{}
	}
	return s.sc
}

// SetAttrs adds attributes, beyond maxAttrs dropped, long strings cut.
func (s *Span) SetAttrs(attrs ...Attr) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range attrs {
		if len(s.attrs) >= maxAttrs {
			return
		}
		if len(a.Str) > maxValue {
			a.Str = a.Str[:maxValue]
		}
		s.attrs = append(s.attrs, a)
	}
}

// SetName renames s (a tool call's span is named once its tool is known).
func (s *Span) SetName(name string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.name = name
	s.mu.Unlock()
}

// Fail marks s as failed: status error, and error.type errType, which is
// the status description too. errType is a kind or a code (tool_error,
// timeout, -32602), never an error's text: those quote prompts and
// answers (a schema mismatch quotes the answer, a refusal the argument),
// which no span may carry.
func (s *Span) Fail(errType string) {
	if s == nil {
		return
	}
	if len(errType) > maxValue {
		errType = errType[:maxValue]
	}
	s.SetAttrs(String("error.type", errType))
	s.mu.Lock()
	s.failed, s.errMsg = true, errType
	s.mu.Unlock()
}

// End ends s and queues it for export; a second End does nothing.
func (s *Span) End() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.end = s.tr.now()
	s.mu.Unlock()
	s.tr.exp.enqueue(s)
}

func newTraceID() ID {
	var id ID
	for !id.IsValid() {
		_, _ = crand.Read(id[:])
	}
	return id
}

func newSpanID() SpanID {
	var id SpanID
	for !id.IsValid() {
		_, _ = crand.Read(id[:])
	}
	return id
}

// Close flushes the spans still queued within ctx's deadline and stops
// the exporter (see Exporter.Close). A nil Tracer has nothing to close.
func (t *Tracer) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.exp.Close(ctx)
}

// Exporter is the tracer's exporter.
func (t *Tracer) Exporter() *Exporter { return t.exp }
