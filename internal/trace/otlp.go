package trace

import "strconv"

// The OTLP/HTTP JSON request (ExportTraceServiceRequest in the proto3 JSON
// mapping: ids in hex, 64-bit integers as decimal strings, enums as
// numbers), only the fields this package fills.
type (
	otlpRequest struct {
		ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
	}
	otlpResourceSpans struct {
		Resource   otlpResource     `json:"resource"`
		ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
	}
	otlpResource struct {
		Attributes []otlpKeyValue `json:"attributes"`
	}
	otlpScopeSpans struct {
		Scope otlpScope  `json:"scope"`
		Spans []otlpSpan `json:"spans"`
	}
	otlpScope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	otlpSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		TraceState        string         `json:"traceState,omitempty"`
		ParentSpanID      string         `json:"parentSpanId,omitempty"`
		Flags             uint32         `json:"flags,omitempty"`
		Name              string         `json:"name"`
		Kind              int            `json:"kind"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []otlpKeyValue `json:"attributes,omitempty"`
		Status            otlpStatus     `json:"status"`
	}
	otlpStatus struct {
		Message string `json:"message,omitempty"`
		Code    int    `json:"code,omitempty"`
	}
	otlpKeyValue struct {
		Key   string    `json:"key"`
		Value otlpValue `json:"value"`
	}
	otlpValue struct {
		StringValue *string `json:"stringValue,omitempty"`
		IntValue    *string `json:"intValue,omitempty"`
	}
)

// OTLP's status codes and span flags.
const (
	statusError = 2
	// flagSampled is W3C's sampled flag; flagRemoteKnown and flagRemote
	// (bits 8 and 9) say whether the parent is known to be remote.
	flagSampled     = 0x01
	flagRemoteKnown = 0x100
	flagRemote      = 0x200
)

func kv(a Attr) otlpKeyValue {
	if a.IsInt {
		v := strconv.FormatInt(a.Int, 10)
		return otlpKeyValue{Key: a.Key, Value: otlpValue{IntValue: &v}}
	}
	v := a.Str
	return otlpKeyValue{Key: a.Key, Value: otlpValue{StringValue: &v}}
}

// request is batch as one export request, under this process's resource.
func (e *Exporter) request(batch []*Span) otlpRequest {
	spans := make([]otlpSpan, 0, len(batch))
	for _, s := range batch {
		s.mu.Lock()
		o := otlpSpan{TraceID: s.sc.TraceID.String(), SpanID: s.sc.SpanID.String(), TraceState: s.sc.State,
			Name: s.name, Kind: int(s.kind), Flags: flagSampled | flagRemoteKnown,
			StartTimeUnixNano: strconv.FormatInt(s.start.UnixNano(), 10), EndTimeUnixNano: strconv.FormatInt(s.end.UnixNano(), 10)}
		if s.parent.IsValid() {
			o.ParentSpanID = s.parent.String()
			if s.kind == Server {
				o.Flags |= flagRemote
			}
		}
		for _, a := range s.attrs {
			o.Attributes = append(o.Attributes, kv(a))
		}
		if s.failed {
			o.Status = otlpStatus{Code: statusError, Message: s.errMsg}
		}
		s.mu.Unlock()
		spans = append(spans, o)
	}
	res := []otlpKeyValue{kv(String("service.name", e.o.Service)), kv(String("telemetry.sdk.language", "go"))}
	if e.o.Version != "" {
		res = append(res, kv(String("service.version", e.o.Version)))
	}
	return otlpRequest{ResourceSpans: []otlpResourceSpans{{
		Resource:   otlpResource{Attributes: res},
		ScopeSpans: []otlpScopeSpans{{Scope: otlpScope{Name: "github.com/gemini-mcp-server/gemini-mcp-server", Version: e.o.Version}, Spans: spans}},
	}}}
}
