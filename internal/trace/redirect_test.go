package trace

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// sink is a loopback server that records the requests it gets and
// answers 200, or, at /moved/*, 307 to redirect.
type sink struct {
	srv      *httptest.Server
	redirect string

	mu      sync.Mutex
	headers []http.Header
	bodies  []string
}

func startSink(t *testing.T, addr string) *sink {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := &sink{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/moved/") {
			http.Redirect(w, r, s.redirect, http.StatusTemporaryRedirect)
			return
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.bodies = append(s.bodies, string(body))
		s.mu.Unlock()
	}))
	s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) requests() ([]http.Header, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...), append([]string(nil), s.bodies...)
}

// TestExportRedirects: a receiver's redirect to another origin (another
// port of 127.0.0.1, another loopback host, https instead of http) is not
// followed: the OTEL_EXPORTER_OTLP_HEADERS secret reaches nothing but the
// receiver named, the batch is dropped and the log says why, without the
// secret. A redirect within the receiver's origin is followed, the body
// and the headers sent again.
func TestExportRedirects(t *testing.T) {
	const secret = "0tlp-s3cret"
	front := startSink(t, "127.0.0.1:0")
	otherPort := startSink(t, "127.0.0.1:0")
	otherHost := startSink(t, "127.0.0.2:0")
	export := func(t *testing.T, url string) (Stats, string) {
		var log geminitest.LockedBuffer
		tr := New(NewExporter(ExporterOptions{URL: url, Headers: map[string]string{"X-Api-Key": secret}, Interval: time.Hour,
			Log: slog.New(slog.NewTextHandler(&log, nil))}), Sampler{Ratio: 1})
		_, s := tr.StartServer(context.Background(), "redirected", SpanContext{})
		s.End()
		if err := tr.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		return tr.Exporter().Stats(), log.String()
	}
	frontURL := front.srv.URL
	for name, target := range map[string]string{
		"another port":    otherPort.srv.URL + "/v1/traces",
		"another host":    otherHost.srv.URL + "/v1/traces",
		"https":           "https" + strings.TrimPrefix(frontURL, "http") + "/v1/traces",
		"no port written": "http://127.0.0.2/v1/traces",
	} {
		t.Run(name, func(t *testing.T) {
			front.redirect = target
			st, log := export(t, frontURL+"/moved/v1/traces")
			if st.Sent != 0 || st.Dropped != 1 {
				t.Errorf("stats %+v, want the span dropped", st)
			}
			for _, s := range []*sink{front, otherPort, otherHost} {
				if h, _ := s.requests(); len(h) != 0 {
					t.Errorf("%s got %d requests, headers %v", s.srv.URL, len(h), h)
				}
			}
			if !strings.Contains(log, "not followed") || strings.Contains(log, secret) {
				t.Errorf("log: %s", log)
			}
		})
	}

	t.Run("same origin", func(t *testing.T) {
		front.redirect = "/v1/traces"
		st, log := export(t, frontURL+"/moved/v1/traces")
		if st.Sent != 1 || st.Dropped != 0 {
			t.Errorf("stats %+v, want the span sent; log: %s", st, log)
		}
		h, bodies := front.requests()
		if len(h) != 1 || h[0].Get("X-Api-Key") != secret || !strings.Contains(bodies[0], `"redirected"`) {
			t.Errorf("the receiver's origin got headers %v, bodies %q", h, bodies)
		}
	})
}
