package api

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	adcFile := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(adcFile, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	gcloud := filepath.Join(home, ".config", "gcloud")
	if err := os.MkdirAll(gcloud, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gcloud, "application_default_credentials.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		ok   bool
		what string
	}{
		{"nothing", map[string]string{}, false, "neither GEMINI_API_KEY nor GOOGLE_API_KEY is set"},
		{"gemini key", map[string]string{"GEMINI_API_KEY": "k"}, true, "Gemini API key from GEMINI_API_KEY"},
		{"google key", map[string]string{"GOOGLE_API_KEY": "k"}, true, "Gemini API key from GOOGLE_API_KEY"},
		{"both keys: the CLI's wins", map[string]string{"GOOGLE_API_KEY": "k", "GEMINI_API_KEY": "k2"}, true, "from GEMINI_API_KEY"},
		{"base url", map[string]string{"GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"}, true, "endpoint http://127.0.0.1:9"},
		{"vertex without project", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true"}, false, "GOOGLE_CLOUD_PROJECT is not set"},
		{"vertex express", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "1", "GOOGLE_API_KEY": "k"}, true, "Vertex AI express mode with the API key from GOOGLE_API_KEY"},
		{"vertex without adc", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "HOME": t.TempDir()}, false,
			"no Application Default Credentials were found"},
		{"vertex adc file", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "TRUE", "GOOGLE_CLOUD_PROJECT": "p",
			"GOOGLE_CLOUD_LOCATION": "europe-west4", "GOOGLE_APPLICATION_CREDENTIALS": adcFile}, true,
			"Vertex AI, project p, location europe-west4, Application Default Credentials from " + adcFile},
		{"vertex adc missing file", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p",
			"GOOGLE_APPLICATION_CREDENTIALS": adcFile + ".gone", "HOME": home}, false, "no Application Default Credentials"},
		{"vertex gcloud login", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "HOME": home}, true,
			"location global, Application Default Credentials from " + filepath.Join(gcloud, "application_default_credentials.json")},
		{"vertex on cloud run", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "K_SERVICE": "svc"}, true,
			"the metadata server"},
		{"vertex off", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "false", "GEMINI_API_KEY": "k"}, true, "Gemini API key"},
	} {
		ok, what := Credentials(mapEnv(tc.env))
		if ok != tc.ok || !strings.Contains(what, tc.what) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, ok, what, tc.ok, tc.what)
		}
	}
}

func TestNewWithoutCredentials(t *testing.T) {
	t.Parallel()
	_, err := New(Options{Getenv: mapEnv(nil)}, memstore.New(session.Options{}), nil)
	wantKind(t, err, backend.KindAuth, 0, "no credentials for the Gemini API", "GEMINI_API_KEY or GOOGLE_API_KEY")
}

func TestIsAuth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    genai.APIError
		auth bool
	}{
		{genai.APIError{Code: 400, Message: "API key not valid. Please pass a valid API key."}, true},
		{genai.APIError{Code: 400, Message: "bad", Details: []map[string]any{{"reason": "API_KEY_INVALID"}}}, true},
		{genai.APIError{Code: 401}, true},
		{genai.APIError{Code: 403}, true},
		{genai.APIError{Code: 400, Message: "Invalid JSON payload"}, false},
		{genai.APIError{Code: 429}, false},
	} {
		if got := isAuth(tc.e); got != tc.auth {
			t.Errorf("isAuth(%+v) = %v", tc.e, got)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "", 3}, {"gemini-2.5-flsh", "gemini-2.5-flash", 1}, {"kitten", "sitting", 3},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

// TestStartsNoProcess checks that the backend starts no process by
// construction: no file of the package imports os/exec or syscall, or
// calls os.StartProcess. (The SDK's Vertex AI credential helpers can run
// a program; with an API key the backend gives the SDK its own HTTP client
// and those are never set up.)
func TestStartsNoProcess(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "os/exec" || path == "syscall" || path == "golang.org/x/sys/unix" {
				t.Errorf("%s imports %s", name, path)
			}
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), "StartProcess") {
			t.Errorf("%s calls StartProcess", name)
		}
	}
}
