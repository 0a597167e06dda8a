package trace

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is what FromEnv read: nil when tracing is off.
type Config struct {
	Exporter ExporterOptions
	Sampler  Sampler
	// SamplerName is the sampler as OTEL_TRACES_SAMPLER named it, for the
	// log.
	SamplerName string
	// Warnings are settings read but not applied, for the log.
	Warnings []string
}

// DefaultService is service.name without OTEL_SERVICE_NAME.
const DefaultService = "gemini-mcp-server"

// FromEnv reads the OpenTelemetry SDK's environment variables this package
// supports (docs/operators.md, Traces, lists them). It returns nil, nil
// when tracing is off: neither OTEL_EXPORTER_OTLP_TRACES_ENDPOINT nor
// OTEL_EXPORTER_OTLP_ENDPOINT is set, OTEL_SDK_DISABLED is true, or
// OTEL_TRACES_EXPORTER is none. A value it cannot use is an error naming
// the variable, never a header's value.
func FromEnv(getenv func(string) string) (*Config, error) {
	endpoint, full := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), true
	if endpoint == "" {
		endpoint, full = getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), false
	}
	if endpoint == "" || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	c := &Config{}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: this server exports traces over OTLP only (otlp, or none)", exp)
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		name := "OTEL_EXPORTER_OTLP_ENDPOINT"
		if full {
			name = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
		}
		return nil, fmt.Errorf("%s: want an http:// or https:// URL, e.g. http://127.0.0.1:4318", name)
	}
	if u.User != nil {
		return nil, fmt.Errorf("OTLP endpoint: credentials in the URL are not supported; give them in OTEL_EXPORTER_OTLP_HEADERS")
	}
	if !full {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	c.Exporter.URL = u.String()
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		p := strings.TrimSpace(getenv(name))
		if p == "" {
			continue
		}
		switch p {
		case "http/json":
		case "http/protobuf":
			c.Warnings = append(c.Warnings, name+"=http/protobuf: traces are sent as http/json, which OTLP/HTTP receivers accept on the same endpoint")
		default:
			return nil, fmt.Errorf("%s=%q: this server sends OTLP over HTTP (http/json; http/protobuf is accepted and sent as JSON), not gRPC", name, p)
		}
		break
	}
	if c.Exporter.Headers, err = headers(getenv("OTEL_EXPORTER_OTLP_HEADERS"), getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS")); err != nil {
		return nil, err
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"} {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 || ms > 600000 {
				return nil, fmt.Errorf("%s=%q: want milliseconds, 1 to 600000", name, v)
			}
			c.Exporter.Timeout = time.Duration(ms) * time.Millisecond
			break
		}
	}
	c.Exporter.Service = DefaultService
	if s := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); s != "" {
		c.Exporter.Service = s
	}
	if c.Sampler, c.SamplerName, err = ParseSampler(getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		return nil, err
	}
	return c, nil
}

// headers reads OTEL_EXPORTER_OTLP_HEADERS's form, key=value pairs
// separated by commas with URL-encoded values; the traces' own variable
// overrides the general one key by key. Errors never quote a value.
func headers(general, traces string) (map[string]string, error) {
	h := map[string]string{}
	for _, src := range []struct{ name, v string }{{"OTEL_EXPORTER_OTLP_HEADERS", general}, {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", traces}} {
		if len(src.v) > 8<<10 {
			return nil, fmt.Errorf("%s: longer than 8 KiB", src.name)
		}
		for i, pair := range strings.Split(src.v, ",") {
			if strings.TrimSpace(pair) == "" {
				continue
			}
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" || strings.ContainsAny(k, " \t\r\n:") {
				return nil, fmt.Errorf("%s: entry %d is not key=value", src.name, i+1)
			}
			dv, err := url.PathUnescape(strings.TrimSpace(v))
			if err != nil || strings.ContainsAny(dv, "\r\n\x00") {
				return nil, fmt.Errorf("%s: the value of %s is not URL-encoded text", src.name, k)
			}
			h[k] = dv
		}
	}
	return h, nil
}

// Secrets are the header values, for the log's redactor.
func (c *Config) Secrets() []string {
	var s []string
	for _, v := range c.Exporter.Headers {
		s = append(s, v)
	}
	return s
}

// ParseSampler reads OTEL_TRACES_SAMPLER and its argument: always_on,
// always_off, traceidratio, and their parentbased_ forms; ""
// (parentbased_always_on) by default. A ratio is 0 to 1, 1 when not given.
func ParseSampler(name, arg string) (Sampler, string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "parentbased_always_on"
	}
	base, parent := strings.CutPrefix(name, "parentbased_")
	s := Sampler{ParentBased: parent}
	switch base {
	case "always_on":
		s.Ratio = 1
	case "always_off":
		s.Ratio = 0
	case "traceidratio":
		s.Ratio = 1
		if a := strings.TrimSpace(arg); a != "" {
			r, err := strconv.ParseFloat(a, 64)
			if err != nil || r < 0 || r > 1 {
				return Sampler{}, "", fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
			}
			s.Ratio = r
		}
	default:
		return Sampler{}, "", fmt.Errorf("OTEL_TRACES_SAMPLER=%q: supported are always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio", name)
	}
	return s, name, nil
}

// Start builds the Tracer c describes, logging where it exports (never
// the headers' values) and c's warnings. Tracer.Close stops it.
func (c *Config) Start(version string, log *slog.Logger) *Tracer {
	o := c.Exporter
	o.Version, o.Log = version, log
	for _, w := range c.Warnings {
		log.Warn(w)
	}
	names := make([]string, 0, len(o.Headers))
	for k := range o.Headers {
		names = append(names, k)
	}
	log.Info("traces: exporting over OTLP/HTTP", "url", o.URL, "service", o.Service, "sampler", c.SamplerName, "headers", strings.Join(names, ","))
	return New(NewExporter(o), c.Sampler)
}
