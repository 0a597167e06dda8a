package trace

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/otlprecv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tracer returns a tracer exporting to recv, with batches sent only when
// full or at Close unless the test ends a batch.
func tracer(t *testing.T, recv *otlprecv.Receiver, o ExporterOptions) *Tracer {
	t.Helper()
	o.URL = recv.URL + "/v1/traces"
	if o.Service == "" {
		o.Service = "svc-test"
	}
	o.Version = "v9.9.9"
	if o.Interval == 0 {
		o.Interval = time.Hour
	}
	tr := New(NewExporter(o), Sampler{ParentBased: true, Ratio: 1})
	t.Cleanup(func() { _ = tr.Close(context.Background()) })
	return tr
}

func next(t *testing.T, recv *otlprecv.Receiver) otlprecv.Span {
	t.Helper()
	select {
	case s := <-recv.Spans():
		return s
	case <-t.Context().Done():
		t.Fatal("no span arrived")
	}
	return otlprecv.Span{}
}

// TestExportShapes sends a remote parent's child and its own child, and
// checks what the receiver decodes: ids, parentage, kind, times, status,
// attributes of both types, the resource, and that Close flushed them.
func TestExportShapes(t *testing.T) {
	recv := otlprecv.Start(t)
	tr := tracer(t, recv, ExporterOptions{Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	parent, ok := ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if !ok {
		t.Fatal("the test's traceparent")
	}
	parent.State = "rojo=1"
	ctx, srv := tr.StartServer(context.Background(), "tools/call chat", parent)
	srv.SetAttrs(String("mcp.method.name", "tools/call"))
	_, child := Start(ctx, "chat gemini-2.5-pro", Client)
	child.SetAttrs(Int("gen_ai.usage.input_tokens", 1234567890123))
	child.Fail("timeout")
	child.End()
	srv.End()
	srv.End() // a second End sends nothing more
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, s := next(t, recv), next(t, recv)
	if s.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || s.ParentSpanID != "00f067aa0ba902b7" || s.Kind != 2 || s.TraceState != "rojo=1" {
		t.Errorf("server span %+v: want the remote parent's trace, its span as parent, kind server, its tracestate", s)
	}
	if s.Flags&0x300 != 0x300 || s.Flags&1 != 1 {
		t.Errorf("server span flags %#x: want sampled and a remote parent", s.Flags)
	}
	if c.TraceID != s.TraceID || c.ParentSpanID != s.SpanID || c.Kind != 3 || c.Name != "chat gemini-2.5-pro" {
		t.Errorf("child span %+v: want the server span's child, kind client", c)
	}
	if c.Attr("gen_ai.usage.input_tokens") != "1234567890123" || c.Attr("error.type") != "timeout" || c.Status.Code != 2 || c.Status.Message != "timeout" {
		t.Errorf("child span %+v: want its int attribute, error.type and an error status", c)
	}
	if s.Status.Code != 0 || s.Attr("mcp.method.name") != "tools/call" {
		t.Errorf("server span %+v: want status unset and its attribute", s)
	}
	if s.Resource["service.name"] != "svc-test" || s.Resource["service.version"] != "v9.9.9" {
		t.Errorf("resource %v", s.Resource)
	}
	h := recv.Headers()
	if len(h) != 1 || h[0].Get("Authorization") != "Bearer s3cret" {
		t.Errorf("requests' headers %v: want one request with the configured header", h)
	}
	if st := tr.Exporter().Stats(); st.Sent != 2 || st.Dropped != 0 {
		t.Errorf("stats %+v", st)
	}
	select {
	case extra := <-recv.Spans():
		t.Errorf("a third span arrived: %+v", extra)
	default:
	}
}

// TestExportFullBatch: a full batch goes at once, without Close or the
// interval.
func TestExportFullBatch(t *testing.T) {
	recv := otlprecv.Start(t)
	tr := tracer(t, recv, ExporterOptions{BatchSize: 3})
	for range 3 {
		_, s := tr.StartServer(context.Background(), "ping", SpanContext{})
		s.End()
	}
	for range 3 {
		if s := next(t, recv); s.ParentSpanID != "" || s.Name != "ping" {
			t.Errorf("span %+v: want a root span named ping", s)
		}
	}
}

// TestExportRetries: 503 and 429 are retried, within bounds; a 400 is not,
// and its spans are counted as dropped.
func TestExportRetries(t *testing.T) {
	recv := otlprecv.Start(t)
	tr := tracer(t, recv, ExporterOptions{BatchSize: 1})
	tr.exp.backoff = time.Millisecond
	recv.Answer(http.StatusServiceUnavailable, http.StatusTooManyRequests)
	_, s := tr.StartServer(context.Background(), "retried", SpanContext{})
	s.End()
	if got := next(t, recv); got.Name != "retried" {
		t.Fatalf("got %q", got.Name)
	}
	if n := len(recv.Headers()); n != 3 {
		t.Errorf("%d requests, want 3 (two refused, then accepted)", n)
	}
	recv.Answer(http.StatusBadRequest)
	_, s = tr.StartServer(context.Background(), "refused", SpanContext{})
	s.End()
	recv.Answer(http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusServiceUnavailable)
	_, s = tr.StartServer(context.Background(), "gave up", SpanContext{})
	s.End()
	_, s = tr.StartServer(context.Background(), "after", SpanContext{})
	s.End()
	if got := next(t, recv); got.Name != "after" {
		t.Fatalf("got %q, want only the span after the refused ones", got.Name)
	}
	if n := len(recv.Headers()); n != 3+1+maxAttempts+1 {
		t.Errorf("%d requests, want %d: 400 never retried, 503 tried %d times", n, 3+1+maxAttempts+1, maxAttempts)
	}
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := tr.Exporter().Stats(); st.Sent != 2 || st.Dropped != 2 {
		t.Errorf("stats %+v, want 2 sent, 2 dropped", st)
	}
}

// TestExportQueueFull: while the receiver does not answer, ended spans
// fill the queue and the rest are dropped and counted; ending a span never
// waits. Close's deadline then cancels the stuck POST, and Close returns
// with the spans left counted (goleak checks its goroutine ended).
func TestExportQueueFull(t *testing.T) {
	arrived := make(chan struct{}, 1)
	recv := otlprecv.Start(t)
	tr := New(NewExporter(ExporterOptions{URL: recv.URL + "/v1/traces", QueueSize: 4, BatchSize: 1, Interval: time.Hour,
		Client: &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			select {
			case arrived <- struct{}{}:
			default:
			}
			<-r.Context().Done()
			return nil, r.Context().Err()
		})}}), Sampler{Ratio: 1})
	_, s := tr.StartServer(context.Background(), "stuck", SpanContext{})
	s.End()
	<-arrived // the exporter holds the first span in a POST that does not end
	for range 10 {
		_, s := tr.StartServer(context.Background(), "queued", SpanContext{})
		s.End()
	}
	if st := tr.Exporter().Stats(); st.Dropped != 6 {
		t.Errorf("stats %+v: want 6 of 10 dropped with a queue of 4", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := tr.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "flushing at shutdown") {
		t.Errorf("Close past its deadline: %v", err)
	}
	if st := tr.Exporter().Stats(); st.Dropped != 11 || st.Sent != 0 {
		t.Errorf("stats after Close %+v: want all 11 dropped", st)
	}
	_, s = tr.StartServer(context.Background(), "after close", SpanContext{})
	s.End()
	if st := tr.Exporter().Stats(); st.Dropped != 12 {
		t.Errorf("a span ended after Close: stats %+v", st)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestNilTracer: with tracing off, nothing is made and nothing fails.
func TestNilTracer(t *testing.T) {
	var tr *Tracer
	ctx := context.Background()
	got, s := tr.StartServer(ctx, "x", SpanContext{})
	if got != ctx || s != nil {
		t.Fatal("a nil Tracer made a span")
	}
	if _, c := Start(ctx, "y", Client); c != nil {
		t.Fatal("Start without a parent made a span")
	}
	s.SetAttrs(String("a", "b"))
	s.Fail("x")
	s.End()
	if err := tr.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSampler(t *testing.T) {
	sampled := SpanContext{TraceID: ID{1}, SpanID: SpanID{1}, Sampled: true}
	unsampled := SpanContext{TraceID: ID{1}, SpanID: SpanID{1}}
	low := ID{15: 1}                                                  // the lowest ids are always in a ratio's share
	high := ID{8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0xff, 15: 1} // the highest almost never
	for _, c := range []struct {
		s      Sampler
		parent SpanContext
		id     ID
		want   bool
	}{
		{Sampler{Ratio: 1}, unsampled, low, true},
		{Sampler{ParentBased: true, Ratio: 1}, unsampled, low, false},
		{Sampler{ParentBased: true, Ratio: 0}, sampled, low, true},
		{Sampler{ParentBased: true, Ratio: 0}, SpanContext{}, low, false},
		{Sampler{Ratio: 0.5}, SpanContext{}, low, true},
		{Sampler{Ratio: 0.5}, SpanContext{}, high, false},
	} {
		if got := c.s.sample(c.parent, c.id); got != c.want {
			t.Errorf("%+v.sample(%+v, %s) = %v", c.s, c.parent, c.id, got)
		}
	}
}
