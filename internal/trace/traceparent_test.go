package trace

import "testing"

// The vectors are written from the W3C Trace Context specification,
// section 3.2 (traceparent) and its processing rules (3.2.2.x, 3.2.4).
func TestParseTraceparent(t *testing.T) {
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	const span = "00f067aa0ba902b7"
	good := []struct {
		in      string
		sampled bool
	}{
		{"00-" + trace + "-" + span + "-01", true},
		{"00-" + trace + "-" + span + "-00", false},
		// Flags other than sampled are ignored, sampled read from bit 0.
		{"00-" + trace + "-" + span + "-09", true},
		{"00-" + trace + "-" + span + "-fe", false},
		// A later version: its first fields are read as version 00's, and
		// what follows must be a dash and more fields.
		{"01-" + trace + "-" + span + "-01", true},
		{"cc-" + trace + "-" + span + "-01-what-the-future-will-be-like", true},
	}
	for _, g := range good {
		sc, ok := ParseTraceparent(g.in)
		if !ok {
			t.Errorf("ParseTraceparent(%q) refused it", g.in)
			continue
		}
		if sc.TraceID.String() != trace || sc.SpanID.String() != span || sc.Sampled != g.sampled {
			t.Errorf("ParseTraceparent(%q) = %s %s sampled=%v", g.in, sc.TraceID, sc.SpanID, sc.Sampled)
		}
	}
	bad := map[string]string{
		"empty":                  "",
		"all-zero trace id":      "00-00000000000000000000000000000000-" + span + "-01",
		"all-zero span id":       "00-" + trace + "-0000000000000000-01",
		"uppercase trace id":     "00-4BF92F3577B34DA6A3CE929D0E0E4736-" + span + "-01",
		"uppercase span id":      "00-" + trace + "-00F067AA0BA902B7-01",
		"uppercase flags":        "00-" + trace + "-" + span + "-0A",
		"uppercase version":      "0A-" + trace + "-" + span + "-01",
		"version ff":             "ff-" + trace + "-" + span + "-01",
		"version 00 with more":   "00-" + trace + "-" + span + "-01-extra",
		"future version no dash": "01-" + trace + "-" + span + "-01extra",
		"short trace id":         "00-" + trace[:31] + "-" + span + "-01",
		"long span id":           "00-" + trace + "-" + span + "0-01",
		"not hex":                "00-" + trace[:31] + "g-" + span + "-01",
		"wrong separator":        "00_" + trace + "-" + span + "-01",
		"spaces":                 " 00-" + trace + "-" + span + "-01",
		"one-digit version":      "0-" + trace + "-" + span + "-01",
		"too long":               "01-" + trace + "-" + span + "-01-" + string(make([]byte, MaxTraceparent)),
	}
	for name, in := range bad {
		if sc, ok := ParseTraceparent(in); ok {
			t.Errorf("%s: ParseTraceparent(%q) = %+v, want it refused", name, in, sc)
		}
	}
}

func TestTraceparentRoundTrip(t *testing.T) {
	sc := SpanContext{TraceID: newTraceID(), SpanID: newSpanID(), Sampled: true}
	got, ok := ParseTraceparent(sc.Traceparent())
	if !ok || got != sc {
		t.Fatalf("ParseTraceparent(%q) = %+v, %v; want %+v", sc.Traceparent(), got, ok, sc)
	}
	if tp := (SpanContext{TraceID: sc.TraceID, SpanID: sc.SpanID}).Traceparent(); tp[53:] != "00" {
		t.Errorf("an unsampled context formats as %q", tp)
	}
}

func TestCleanTracestate(t *testing.T) {
	for in, want := range map[string]string{
		"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
		" a=1 ":                    "a=1",
		"a=1\nb=2":                 "",
		string(make([]byte, 600)):  "",
		"a=1" + repeat(",b=2", 32): "",
	} {
		if got := cleanTracestate(in); got != want {
			t.Errorf("cleanTracestate(%.40q) = %q, want %q", in, got, want)
		}
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}
