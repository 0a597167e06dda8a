// Package otlprecv is an OTLP/HTTP trace receiver on a loopback port, for
// tests: it accepts POST /v1/traces with Content-Type application/json,
// decodes the body as an ExportTraceServiceRequest in the proto3 JSON
// mapping that the OTLP/HTTP specification prescribes (lowerCamelCase
// names, trace and span ids in hex, 64-bit integers as strings), refuses
// anything else with 400 or 415 as a collector would, and hands each
// decoded span to the test. Its types are written from the
// specification, not shared with the exporter.
package otlprecv

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// Request is ExportTraceServiceRequest.
type Request struct {
	ResourceSpans []ResourceSpans `json:"resourceSpans"`
}

type (
	// ResourceSpans is the OTLP message of the same name.
	ResourceSpans struct {
		Resource   Resource     `json:"resource"`
		ScopeSpans []ScopeSpans `json:"scopeSpans"`
		SchemaURL  string       `json:"schemaUrl"`
	}
	// Resource is the OTLP message of the same name.
	Resource struct {
		Attributes []KeyValue `json:"attributes"`
	}
	// ScopeSpans is the OTLP message of the same name.
	ScopeSpans struct {
		Scope Scope  `json:"scope"`
		Spans []Span `json:"spans"`
	}
	// Scope is the OTLP message of the same name.
	Scope struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	// Span is the OTLP message of the same name.
	Span struct {
		TraceID           string     `json:"traceId"`
		SpanID            string     `json:"spanId"`
		TraceState        string     `json:"traceState"`
		ParentSpanID      string     `json:"parentSpanId"`
		Flags             uint32     `json:"flags"`
		Name              string     `json:"name"`
		Kind              int        `json:"kind"`
		StartTimeUnixNano string     `json:"startTimeUnixNano"`
		EndTimeUnixNano   string     `json:"endTimeUnixNano"`
		Attributes        []KeyValue `json:"attributes"`
		Status            Status     `json:"status"`
		// Resource is the attributes of the span's resource, flattened.
		Resource map[string]string `json:"-"`
	}
	// Status is the OTLP message of the same name.
	Status struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	}
	// KeyValue is the OTLP message of the same name.
	KeyValue struct {
		Key   string   `json:"key"`
		Value AnyValue `json:"value"`
	}
	// AnyValue is the OTLP message of the same name.
	AnyValue struct {
		StringValue *string  `json:"stringValue"`
		IntValue    *string  `json:"intValue"`
		BoolValue   *bool    `json:"boolValue"`
		DoubleValue *float64 `json:"doubleValue"`
	}
)

// Attr is attribute key of s as a string ("" when absent); an int value
// is given in decimal.
func (s Span) Attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			switch {
			case a.Value.StringValue != nil:
				return *a.Value.StringValue
			case a.Value.IntValue != nil:
				return *a.Value.IntValue
			}
		}
	}
	return ""
}

// Receiver is a running receiver.
type Receiver struct {
	URL string // the endpoint, OTEL_EXPORTER_OTLP_ENDPOINT's form (without /v1/traces)

	srv   *httptest.Server
	spans chan Span
	mu    sync.Mutex
	// Status, when set, answers a request with that status instead
	// (the next call first); tests of retries set it.
	status  []int
	headers []http.Header
}

// Start starts a receiver on 127.0.0.1, closed when the test ends.
func Start(tb testing.TB) *Receiver {
	tb.Helper()
	r := &Receiver{spans: make(chan Span, 4096)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(r.serve)}}
	r.srv.Start()
	r.URL = r.srv.URL
	tb.Cleanup(r.srv.Close)
	return r
}

// Answer makes the next requests answer these statuses, in order.
func (r *Receiver) Answer(status ...int) {
	r.mu.Lock()
	r.status = append(r.status, status...)
	r.mu.Unlock()
}

// Headers are the headers of every request received so far.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// Spans is where each decoded span arrives, in the order received.
func (r *Receiver) Spans() <-chan Span { return r.spans }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	var status int
	if len(r.status) > 0 {
		status, r.status = r.status[0], r.status[1:]
	}
	r.mu.Unlock()
	if req.URL.Path != "/v1/traces" || req.Method != http.MethodPost {
		http.NotFound(w, req)
		return
	}
	if req.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "only application/json here", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if status != 0 {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "try again", status)
		return
	}
	var m Request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	var out []Span
	for _, rs := range m.ResourceSpans {
		res := map[string]string{}
		for _, a := range rs.Resource.Attributes {
			if a.Value.StringValue != nil {
				res[a.Key] = *a.Value.StringValue
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				if why := invalid(s); why != "" {
					http.Error(w, why, http.StatusBadRequest)
					return
				}
				s.Resource = res
				out = append(out, s)
			}
		}
	}
	for _, s := range out {
		r.spans <- s
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, "{}")
}

// invalid says what of s breaks the OTLP JSON encoding's rules.
func invalid(s Span) string {
	if !hexID(s.TraceID, 16) {
		return "traceId is not 32 hex digits of a non-zero id: " + s.TraceID
	}
	if !hexID(s.SpanID, 8) {
		return "spanId is not 16 hex digits of a non-zero id: " + s.SpanID
	}
	if s.ParentSpanID != "" && !hexID(s.ParentSpanID, 8) {
		return "parentSpanId is not 16 hex digits: " + s.ParentSpanID
	}
	start, err1 := strconv.ParseUint(s.StartTimeUnixNano, 10, 64)
	end, err2 := strconv.ParseUint(s.EndTimeUnixNano, 10, 64)
	if err1 != nil || err2 != nil || end < start || start == 0 {
		return "start and end times are not fixed64 nanoseconds as strings, in order"
	}
	if s.Name == "" || s.Kind < 0 || s.Kind > 5 {
		return "a span without a name, or of an unknown kind"
	}
	return ""
}

func hexID(s string, n int) bool {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != n || s != hex.EncodeToString(b) {
		return false
	}
	for _, c := range b {
		if c != 0 {
			return true
		}
	}
	return false
}
