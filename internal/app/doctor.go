package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/apicreds"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/clihome"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// report collects doctor's findings.
type report struct {
	w     io.Writer
	fails int
}

func (r *report) ok(format string, a ...any)   { fmt.Fprintf(r.w, "ok    "+format+"\n", a...) }
func (r *report) warn(format string, a ...any) { fmt.Fprintf(r.w, "WARN  "+format+"\n", a...) }
func (r *report) fail(format string, a ...any) {
	r.fails++
	fmt.Fprintf(r.w, "FAIL  "+format+"\n", a...)
}

// Doctor checks what a call needs and prints one line per finding. It exits
// 1 when a problem would make every call fail.
func Doctor(ctx context.Context, cfg *config.Config, version string, w io.Writer, getenv func(string) string) int {
	r := &report{w: w}
	fmt.Fprintf(w, "gemini-mcp-server %s doctor\n", version)

	if api := checkBackend(ctx, r, cfg, getenv); !api {
		checkCLI(ctx, r, cfg, getenv)
	}
	cwd := cfg.Tools.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}

	checkStore(ctx, r, cfg)
	if _, err := validate.ResolveDir(cwd, cwd); err != nil {
		r.fail("default working directory: %v", err)
	} else {
		r.ok("default working directory: %s", cwd)
	}
	if cfg.Tools.Served != nil {
		r.ok("tools served (--tools %s): %s", cfg.Tools.Toolset, strings.Join(cfg.Tools.Served, ", "))
	}

	if r.fails > 0 {
		fmt.Fprintf(w, "%d blocking problem(s): calls will fail until they are fixed.\n", r.fails)
		return 1
	}
	fmt.Fprintln(w, "No blocking problems found.")
	return 0
}

// checkBackend reports which backend would serve, and why; it fails when
// none could. It reports whether that is the API backend, which needs
// nothing of the Gemini CLI.
func checkBackend(ctx context.Context, r *report, cfg *config.Config, getenv func(string) string) (api bool) {
	c, err := chooseBackend(cfg, getenv)
	switch {
	case err != nil:
		r.fail("backend: %v", err)
		return false
	case c.name != config.BackendAPI:
		r.ok("backend: %s (%s)", c.name, c.why)
		return false
	case newAPIBackend == nil:
		r.fail("backend: api (%s): %v", c.why, errNoAPIBackend)
	case len(c.creds) == 0:
		r.fail("backend: api, but %s. %s", apicreds.Read(getenv).What, apicreds.CredentialsHelp)
	default:
		r.ok("backend: api (%s)", c.why)
		if checkAPICredentials != nil {
			if models, err := checkAPICredentials(ctx, cfg, getenv); err != nil {
				// The backend's reason says what failed: a refusal of the
				// credentials (401, 403), an endpoint not reached (the
				// network, DNS, a timeout), or the API's own error.
				var be *backend.Error
				if errors.As(err, &be) {
					r.fail("%v", err)
				} else {
					r.fail("the API backend could not be set up to check the credentials: %v", err)
				}
			} else {
				r.ok("the Gemini API accepts the credentials")
				for _, m := range models {
					r.ok("model %s", m)
				}
			}
		}
	}
	return true
}

// checkAPICredentials, when the API backend is linked in, makes one cheap
// request with the credentials the API backend would use: the model list,
// which it returns, one line per model that answers prompts.
var checkAPICredentials func(ctx context.Context, cfg *config.Config, getenv func(string) string) ([]string, error)

// checkCLI checks what the Gemini CLI backends need: the CLI, its version,
// its credentials and settings.
func checkCLI(ctx context.Context, r *report, cfg *config.Config, getenv func(string) string) {
	cmd, err := geminicli.Resolve(cfg.CLI.Gemini)
	if err != nil {
		r.fail("%v", err)
	} else {
		r.ok("gemini CLI: %s", cmd)
		vctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		v, err := cli.NewRunner(geminicli.Options{Gemini: cfg.CLI.Gemini}, nil).Version(vctx)
		cancel()
		if err != nil {
			r.fail("gemini --version failed: %v", err)
		} else {
			r.ok("gemini version %s", v)
		}
	}

	home := clihome.Dir(getenv)
	cwd := cfg.Tools.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	var user *clihome.Settings
	if home == "" {
		r.warn("cannot tell where the Gemini CLI keeps its settings: neither GEMINI_CLI_HOME nor HOME is set, and the user database names no home directory")
	} else {
		user = readSettings(r, filepath.Join(home, "settings.json"))
	}
	workspace := readSettings(r, filepath.Join(cwd, ".gemini", "settings.json"))
	checkAuth(r, getenv, home, cwd, user, workspace)
	checkRetention(r, home, user, workspace)
	if getenv("GEMINI_SYSTEM_MD") != "" {
		r.warn("GEMINI_SYSTEM_MD=%s is set: it replaces the CLI's system prompt on every call that passes no systemPrompt", getenv("GEMINI_SYSTEM_MD"))
	}
}

// readSettings reads the CLI's settings file at path: nil when there is
// none, or (with a warning) when it does not parse.
func readSettings(r *report, path string) *clihome.Settings {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s, err := clihome.ParseSettings(data)
	if err != nil {
		r.warn("cannot read %s: %v", path, err)
		return nil
	}
	return s
}

func checkAuth(r *report, getenv func(string) string, home, cwd string, user, workspace *clihome.Settings) {
	selected := ""
	for _, s := range []*clihome.Settings{workspace, user} {
		if s != nil && s.Security.Auth.SelectedType != "" {
			selected = s.Security.Auth.SelectedType
			break
		}
	}
	if selected != "" && !checkSelectedAuth(r, getenv, home, cwd, selected) {
		return
	}
	var found []string
	for _, k := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"} {
		if getenv(k) != "" {
			found = append(found, k)
		}
	}
	isTrue := func(k string) bool { v := strings.ToLower(getenv(k)); return v == "true" || v == "1" }
	if isTrue("GOOGLE_GENAI_USE_VERTEXAI") {
		found = append(found, "GOOGLE_GENAI_USE_VERTEXAI")
		if getenv("GOOGLE_API_KEY") == "" && (getenv("GOOGLE_CLOUD_PROJECT") == "" || getenv("GOOGLE_CLOUD_LOCATION") == "") {
			r.fail("Vertex AI is selected but neither GOOGLE_API_KEY nor GOOGLE_CLOUD_PROJECT with GOOGLE_CLOUD_LOCATION is set")
		}
	}
	if isTrue("GOOGLE_GENAI_USE_GCA") {
		found = append(found, "GOOGLE_GENAI_USE_GCA")
	}
	if _, err := os.Stat(filepath.Join(home, "oauth_creds.json")); home != "" && err == nil {
		found = append(found, "a Google login ("+filepath.Join(home, "oauth_creds.json")+")")
	}
	if selected != "" {
		found = append(found, "settings security.auth.selectedType="+selected)
	}
	if len(found) == 0 {
		r.fail("no Gemini credentials found in this environment. %s", geminicli.AuthHelp)
		return
	}
	r.ok("credentials: %s", strings.Join(found, ", "))
	if selected == "oauth-personal" || selected == "LOGIN_WITH_GOOGLE" {
		r.warn("the CLI logs in with a Google account: free, Google AI Pro and Ultra accounts lost Gemini CLI access on 2026-06-18; only Code Assist Standard/Enterprise seats still work that way")
	}
}

// checkRetention warns about google-gemini/gemini-cli#27368: with session
// retention on, resuming a session in a later minute leaves a stray file,
// and the next start-up's clean-up deletes the real session with it.
func checkRetention(r *report, home string, user, workspace *clihome.Settings) {
	for _, s := range []*clihome.Settings{workspace, user} {
		if s != nil && s.General.SessionRetention.Enabled != nil {
			if !*s.General.SessionRetention.Enabled {
				r.ok("session retention is off (protects resumed sessions from upstream bug #27368)")
				return
			}
			break
		}
	}
	file := "the Gemini CLI's settings.json"
	if home != "" {
		file = filepath.Join(home, "settings.json")
	}
	r.warn("session retention is on: the CLI's clean-up can delete a resumed session (upstream bug google-gemini/gemini-cli#27368). "+
		"Add {\"general\":{\"sessionRetention\":{\"enabled\":false}}} to %s", file)
}
