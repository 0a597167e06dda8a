package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// pathWithGemini returns a directory holding an executable named gemini,
// for PATH.
func pathWithGemini(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	name := "gemini"
	if runtime.GOOS == "windows" {
		name = "gemini.exe"
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func parse(t *testing.T, args ...string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test", "", args, func(string) string { return "" }, io.Discard, configRules())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestChooseBackend: --backend auto takes the warm CLI backend when a
// gemini executable is in PATH, else the API backend when API or Vertex AI
// credentials are set, else fails explaining both ways; a named backend is
// taken as named.
func TestChooseBackend(t *testing.T) {
	withGemini, without := pathWithGemini(t), t.TempDir()
	adc := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(adc, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	vertex := map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1", "GOOGLE_APPLICATION_CREDENTIALS": adc}
	cases := []struct {
		name    string
		backend string
		path    string
		env     map[string]string
		want    config.Backend // the backend, or "" for an error
		why     string         // in the reason or the error
	}{
		{"gemini in PATH", "auto", withGemini, nil, "warm", "the Gemini CLI was found at " + withGemini},
		{"gemini in PATH and a key", "auto", withGemini, map[string]string{"GEMINI_API_KEY": "k"}, "warm", "found"},
		{"a Gemini API key", "auto", without, map[string]string{"GEMINI_API_KEY": "k"}, "api", "GEMINI_API_KEY"},
		{"a Google API key", "auto", without, map[string]string{"GOOGLE_API_KEY": "k"}, "api", "GOOGLE_API_KEY"},
		{"Vertex AI", "auto", without, vertex, "api", "Vertex AI"},
		{"Vertex AI without credentials", "auto", without, map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l", "HOME": without}, "", "Application Default Credentials"},
		{"a project without Vertex AI", "auto", without, map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "false", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"}, "", "GEMINI_API_KEY"},
		{"nothing", "auto", without, nil, "", "npm install -g @google/gemini-cli"},
		{"oneshot named", "oneshot", without, nil, "oneshot", "--backend oneshot"},
		{"warm named", "warm", withGemini, nil, "warm", "--backend warm"},
		{"api named", "api", withGemini, map[string]string{"GEMINI_API_KEY": "k"}, "api", "--backend api; credentials: Gemini API key from GEMINI_API_KEY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PATH", c.path)
			cfg := parse(t, "--backend", c.backend)
			getenv := func(k string) string { return c.env[k] }
			got, err := chooseBackend(cfg, getenv)
			switch {
			case c.want == "" && err == nil:
				t.Fatalf("chose %s (%s), want an error", got.name, got.why)
			case c.want == "" && (!strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "GEMINI_API_KEY") || !strings.Contains(err.Error(), "npm install")):
				t.Fatalf("error %q does not explain both ways and %q", err, c.why)
			case c.want != "" && err != nil:
				t.Fatal(err)
			case c.want != "" && (got.name != c.want || !strings.Contains(got.why, c.why)):
				t.Fatalf("chose %s (%s), want %s (%s)", got.name, got.why, c.want, c.why)
			}
		})
	}
}

// stubAPI stands for the API backend.
type stubAPI struct{ closed bool }

func (s *stubAPI) Name() string          { return "api" }
func (s *stubAPI) Family() config.Family { return config.FamilyAPI }
func (s *stubAPI) Close()                { s.closed = true }
func (s *stubAPI) Run(context.Context, backend.Turn) (*backend.Answer, error) {
	return &backend.Answer{Text: "api"}, nil
}

// TestNewBackendAPI: --backend api fails clearly in a build without the
// API backend, and builds it, limited, where it is linked in.
func TestNewBackendAPI(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "k")
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	log := slog.New(slog.DiscardHandler)
	cfg := parse(t, "--backend", "api")
	saved := newAPIBackend
	t.Cleanup(func() { newAPIBackend = saved })
	newAPIBackend = nil
	if _, err := newBackend(cfg, IO{}.env(), store, log); !errors.Is(err, errNoAPIBackend) || !strings.Contains(err.Error(), "not available in this build") {
		t.Fatalf("without the API backend: %v", err)
	}
	stub := &stubAPI{}
	newAPIBackend = func(*config.Config, func(string) string, session.Store, backend.ToolHost, *slog.Logger) (backend.Backend, backend.TokenCounter, error) {
		return stub, nil, nil
	}
	b, err := newBackend(cfg, IO{}.env(), store, log)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := b.Backend.Run(context.Background(), backend.Turn{}); err != nil || a.Text != "api" || b.Backend.Name() != "api" {
		t.Fatalf("%v %v %s", a, err, b.Backend.Name())
	}
	b.Close()
	if !stub.closed {
		t.Fatal("Close did not reach the API backend")
	}
}

// TestDoctorReportsBackend: doctor names the backend that would run and
// why; for the API backend it lists the credentials found and skips the
// CLI's checks, and it fails when this build has no API backend.
func TestDoctorReportsBackend(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := newAPIBackend
	t.Cleanup(func() { newAPIBackend = saved })
	// doctor's one request goes to a fake Gemini API that wants key k.
	fake := fakeapi.New()
	t.Cleanup(fake.Close)
	fake.RequireKey("k")
	env := map[string]string{"GEMINI_API_KEY": "k", "HOME": t.TempDir(), "GOOGLE_GEMINI_BASE_URL": fake.URL()}
	getenv := func(k string) string { return env[k] }
	cfg := parse(t, "--state-dir", t.TempDir(), "--cwd", t.TempDir())
	doctor := func() (int, string) {
		var out strings.Builder
		code := Doctor(context.Background(), cfg, "test", &out, getenv)
		return code, out.String()
	}

	newAPIBackend = nil
	if code, out := doctor(); code != 1 || !strings.Contains(out, "FAIL  backend: api (auto: no Gemini CLI was found, and API credentials are set: Gemini API key from GEMINI_API_KEY, endpoint "+fake.URL()+"): the API backend is not available in this build") {
		t.Fatalf("without the API backend: exit %d\n%s", code, out)
	}
	if checkAPICredentials == nil {
		t.Skip("the rest needs the API backend's credential check, which this build (-tags noapi) has not")
	}
	newAPIBackend = func(*config.Config, func(string) string, session.Store, backend.ToolHost, *slog.Logger) (backend.Backend, backend.TokenCounter, error) {
		return &stubAPI{}, nil, nil
	}
	code, out := doctor()
	if code != 0 || !strings.Contains(out, "ok    backend: api (auto: no Gemini CLI was found, and API credentials are set: Gemini API key from GEMINI_API_KEY") ||
		!strings.Contains(out, "ok    the Gemini API accepts the credentials") || strings.Contains(out, "gemini CLI") ||
		!strings.Contains(out, "ok    model gemini-2.5-flash (default, alias flash): 1048576 tokens in; thinking by budget; Google Search\n") ||
		!strings.Contains(out, "ok    model gemini-3-pro-preview (not stable): 1048576 tokens in; thinking by level; Google Search\n") ||
		strings.Contains(out, "text-embedding") {
		t.Fatalf("with the API backend: exit %d\n%s", code, out)
	}
	env["GEMINI_API_KEY"] = "wrong"
	if code, out := doctor(); code != 1 || !strings.Contains(out, "FAIL  the Gemini API refused the credentials") {
		t.Fatalf("with a wrong key: exit %d\n%s", code, out)
	}
	// An endpoint that cannot be reached has not refused anything: doctor
	// says which of the two it was.
	env["GEMINI_API_KEY"] = "k"
	env["GOOGLE_GEMINI_BASE_URL"] = closedURL(t)
	if code, out := doctor(); code != 1 || !strings.Contains(out, "FAIL  the Gemini API could not be reached") || strings.Contains(out, "refused the credentials") {
		t.Fatalf("with the network down: exit %d\n%s", code, out)
	}
	env["GOOGLE_GEMINI_BASE_URL"] = fake.URL()
	delete(env, "GEMINI_API_KEY")
	if code, out := doctor(); code != 1 || !strings.Contains(out, "FAIL  backend: --backend auto found no way to reach Gemini") {
		t.Fatalf("with nothing: exit %d\n%s", code, out)
	}
}

// closedURL is an http URL on loopback where nothing listens: a port just
// listened on and closed again.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
