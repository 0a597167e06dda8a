package app

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// checkSelectedAuth checks that the environment holds what the auth type
// chosen in the CLI's settings needs. Headless, the CLI takes the settings'
// security.auth.selectedType over its environment and exits 41 when that
// type lacks its variables, so each of these would fail every call. It
// reports a failure and returns false when a call cannot authenticate.
func checkSelectedAuth(r *report, getenv func(string) string, home, cwd, selected string) bool {
	// The CLI also loads the first .env file it finds, without
	// overriding variables that are already set.
	dotenv := readDotEnv(findEnvFile(cwd, home))
	has := func(k string) bool { return getenv(k) != "" || dotenv[k] != "" }
	where := "security.auth.selectedType is " + selected + " in the Gemini CLI's settings"
	switch selected {
	case "oauth-personal", "LOGIN_WITH_GOOGLE", "compute-default-credentials":
		return true
	case "gemini-api-key":
		if has("GEMINI_API_KEY") {
			return true
		}
		if _, err := os.Stat(filepath.Join(home, "gemini-credentials.json")); home != "" && err == nil {
			r.warn("%s and GEMINI_API_KEY is not set: calls work only if %s holds a key saved by the CLI", where, filepath.Join(home, "gemini-credentials.json"))
			return true
		}
		r.fail("%s, but GEMINI_API_KEY is not set: every call would fail with exit 41. "+
			"Give the server GEMINI_API_KEY through the MCP client's registration (for example -e GEMINI_API_KEY=... or its \"env\"), "+
			"or change selectedType in %s", where, filepath.Join(home, "settings.json"))
		return false
	case "vertex-ai":
		if has("GOOGLE_API_KEY") || (has("GOOGLE_CLOUD_PROJECT") && has("GOOGLE_CLOUD_LOCATION")) {
			return true
		}
		r.fail("%s, but neither GOOGLE_CLOUD_PROJECT with GOOGLE_CLOUD_LOCATION nor GOOGLE_API_KEY is set: every call would fail with exit 41. "+
			"Give the server those variables through the MCP client's registration", where)
		return false
	}
	r.fail("%s, which the Gemini CLI does not accept (it takes gemini-api-key, vertex-ai, oauth-personal or compute-default-credentials): every call would fail with exit 41. Fix it in %s",
		where, filepath.Join(home, "settings.json"))
	return false
}

// findEnvFile is the .env file the CLI loads: in cwd or the nearest parent
// (.gemini/.env before .env), else ~/.gemini/.env, else ~/.env. home is the
// CLI's .gemini directory.
func findEnvFile(cwd, home string) string {
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	for dir := filepath.Clean(cwd); dir != "" && cwd != ""; {
		for _, p := range []string{filepath.Join(dir, ".gemini", ".env"), filepath.Join(dir, ".env")} {
			if exists(p) {
				return p
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	for _, p := range []string{filepath.Join(home, ".env"), filepath.Join(filepath.Dir(home), ".env")} {
		if home != "" && exists(p) {
			return p
		}
	}
	return ""
}

// readDotEnv reads KEY=VALUE lines; it is enough to tell whether a
// variable is set.
func readDotEnv(path string) map[string]string {
	vars := map[string]string{}
	if path == "" {
		return vars
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return vars
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		vars[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return vars
}
