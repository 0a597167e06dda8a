// Package trace records OpenTelemetry spans and exports them over OTLP/HTTP
// (JSON, the proto3 JSON mapping) when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set: a server span per MCP request,
// its parent the W3C traceparent a client put in params._meta, and a child
// span per backend call and per downstream MCP tool call. Without the
// variables there is no Tracer, and every hook costs a nil check.
//
// It is a small implementation of its own rather than the OpenTelemetry Go
// SDK with its otlptracehttp exporter, which added 2.2 MB to the stripped
// binary (grpc, protobuf and cloud.google.com/go/auth moved to newer
// versions with it): see docs/operators.md, Traces.
package trace

import (
	"encoding/hex"
	"strings"
)

// ID is a W3C trace context's trace id; an all-zero one is invalid.
type ID [16]byte

// SpanID is a W3C trace context's span id; an all-zero one is invalid.
type SpanID [8]byte

// IsValid says whether id is not all zeros.
func (id ID) IsValid() bool { return id != ID{} }

// IsValid says whether id is not all zeros.
func (id SpanID) IsValid() bool { return id != SpanID{} }

// String is id in lowercase hex, as traceparent and OTLP/JSON spell it.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// String is id in lowercase hex, as traceparent and OTLP/JSON spell it.
func (id SpanID) String() string { return hex.EncodeToString(id[:]) }

// SpanContext is what a traceparent carries, and tracestate beside it.
type SpanContext struct {
	TraceID ID
	SpanID  SpanID
	// Sampled is the traceparent's sampled flag: the caller may record.
	Sampled bool
	// State is the tracestate header's value, kept as it came (size
	// capped), "" when none.
	State string
}

// IsValid says whether both ids are valid.
func (sc SpanContext) IsValid() bool { return sc.TraceID.IsValid() && sc.SpanID.IsValid() }

// MaxTraceparent and MaxTracestate cap what is read of a peer's trace
// context: a version-00 traceparent is 55 characters, later versions may
// append fields; the W3C tracestate has at most 32 members, and vendors
// are told to keep it within 512 characters.
const (
	MaxTraceparent = 256
	MaxTracestate  = 512
)

// ParseTraceparent reads a W3C traceparent header value
// (https://www.w3.org/TR/trace-context/#traceparent-header):
// version-traceid-parentid-flags in lowercase hex. It returns false for
// anything it must not use: a wrong length, uppercase or other non-hex
// characters, version ff, all-zero ids, a version-00 value with anything
// after the flags, or a value longer than MaxTraceparent. A version above
// 00 is read as the spec says: its first four fields as version 00's, and
// what follows them must start with "-".
func ParseTraceparent(s string) (SpanContext, bool) {
	const v00 = 55
	if len(s) < v00 || len(s) > MaxTraceparent {
		return SpanContext{}, false
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return SpanContext{}, false
	}
	var version, flags [1]byte
	var sc SpanContext
	if !lowerHex(version[:], s[0:2]) || version[0] == 0xff {
		return SpanContext{}, false
	}
	if !lowerHex(sc.TraceID[:], s[3:35]) || !lowerHex(sc.SpanID[:], s[36:52]) || !lowerHex(flags[:], s[53:55]) {
		return SpanContext{}, false
	}
	if version[0] == 0 && len(s) != v00 {
		return SpanContext{}, false
	}
	if len(s) > v00 && s[v00] != '-' {
		return SpanContext{}, false
	}
	if !sc.IsValid() {
		return SpanContext{}, false
	}
	sc.Sampled = flags[0]&1 == 1
	return sc, true
}

// lowerHex decodes s, lowercase hex only, into dst (len(s) == 2*len(dst)).
func lowerHex(dst []byte, s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// Traceparent formats sc as a version-00 traceparent.
func (sc SpanContext) Traceparent() string {
	flags := "00"
	if sc.Sampled {
		flags = "01"
	}
	return "00-" + sc.TraceID.String() + "-" + sc.SpanID.String() + "-" + flags
}

// cleanTracestate returns s when it fits the W3C tracestate's outline
// (printable ASCII, within MaxTracestate, at most 32 list members), else
// "": a tracestate that cannot be valid is dropped, never an error.
func cleanTracestate(s string) string {
	if len(s) > MaxTracestate {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return ""
		}
	}
	if strings.Count(s, ",") >= 32 {
		return ""
	}
	return strings.TrimSpace(s)
}
