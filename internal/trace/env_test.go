package trace

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvOff(t *testing.T) {
	for _, m := range []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
	} {
		if c, err := FromEnv(env(m)); c != nil || err != nil {
			t.Errorf("FromEnv(%v) = %+v, %v; want tracing off", m, c, err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":       "https://otel.example:4318/base/",
		"OTEL_EXPORTER_OTLP_HEADERS":        "api-key=s%3Dcret,x-tenant=one",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-tenant=two",
		"OTEL_EXPORTER_OTLP_TIMEOUT":        "2500",
		"OTEL_SERVICE_NAME":                 "gemini-eu",
		"OTEL_TRACES_SAMPLER":               "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":           "0.25",
		"OTEL_EXPORTER_OTLP_PROTOCOL":       "http/protobuf",
	}))
	if err != nil {
		t.Fatal(err)
	}
	o := c.Exporter
	if o.URL != "https://otel.example:4318/base/v1/traces" || o.Service != "gemini-eu" || o.Timeout != 2500*time.Millisecond {
		t.Errorf("options %+v", o)
	}
	if o.Headers["api-key"] != "s=cret" || o.Headers["x-tenant"] != "two" || len(o.Headers) != 2 {
		t.Errorf("headers %v: want the values decoded, the traces' variable winning", o.Headers)
	}
	if c.Sampler != (Sampler{ParentBased: true, Ratio: 0.25}) || len(c.Warnings) != 1 {
		t.Errorf("sampler %+v, warnings %q", c.Sampler, c.Warnings)
	}
	// The traces' own endpoint is used as it is; the default service.
	c, err = FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://ignored:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/custom"}))
	if err != nil || c.Exporter.URL != "http://127.0.0.1:4318/custom" || c.Exporter.Service != DefaultService || c.Sampler != (Sampler{ParentBased: true, Ratio: 1}) {
		t.Errorf("FromEnv = %+v, %v", c, err)
	}
}

// TestFromEnvErrors: a setting that cannot be used is refused, naming the
// variable and never a header's value.
func TestFromEnvErrors(t *testing.T) {
	const ep = "http://127.0.0.1:4318"
	for name, m := range map[string]map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"},
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://x"},
		"credentials in the URL":             {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:topsecret@h:4318"},
		"OTEL_EXPORTER_OTLP_PROTOCOL":        {"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"OTEL_EXPORTER_OTLP_HEADERS":         {"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_HEADERS": "topsecret"},
		"is not URL-encoded":                 {"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_HEADERS": "k=topsecret%zz"},
		"OTEL_EXPORTER_OTLP_TIMEOUT":         {"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
		"OTEL_TRACES_SAMPLER=":               {"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "jaeger_remote"},
		"OTEL_TRACES_SAMPLER_ARG":            {"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
		"OTEL_TRACES_EXPORTER":               {"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "zipkin"},
	} {
		c, err := FromEnv(env(m))
		if err == nil {
			t.Errorf("%v: FromEnv = %+v, want an error", m, c)
			continue
		}
		if !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "topsecret") {
			t.Errorf("%v: error %q, want it to name %s and no secret", m, err, name)
		}
	}
}
