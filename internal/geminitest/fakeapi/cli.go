package fakeapi

import (
	"os"
	"path/filepath"
	"testing"
)

// Settings is the settings.json [Home] writes: API-key auth (required with
// GOOGLE_GEMINI_BASE_URL), no folder trust prompts, no telemetry or usage
// statistics, no update checks, no IDE, and no session cleanup (which hits
// upstream bug google-gemini/gemini-cli#27368).
const Settings = `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},` +
	`"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},` +
	`"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false,"sessionRetention":{"enabled":false}},` +
	`"ide":{"enabled":false}}`

// Home makes dir a Gemini CLI home that talks to the API at baseURL: it
// writes dir/.gemini/settings.json ([Settings]) and returns the environment
// entries HOME=dir, GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL=baseURL. The
// CLI then keeps its sessions under dir/.gemini/tmp.
func Home(tb testing.TB, dir, baseURL string) []string {
	tb.Helper()
	gdir := filepath.Join(dir, ".gemini")
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		tb.Fatalf("fakeapi: %v", err)
	}
	if err := os.WriteFile(filepath.Join(gdir, "settings.json"), []byte(Settings+"\n"), 0o644); err != nil {
		tb.Fatalf("fakeapi: %v", err)
	}
	return []string{
		"HOME=" + dir,
		"GEMINI_API_KEY=fakeapi-key",
		"GOOGLE_GEMINI_BASE_URL=" + baseURL,
	}
}

// Home is [Home] for this Server's URL.
func (s *Server) Home(tb testing.TB, dir string) []string {
	tb.Helper()
	return Home(tb, dir, s.URL())
}

// Environment variables that gate the tests running the real Gemini CLI.
const (
	// EnvGemini holds the path of the real gemini executable.
	EnvGemini = "GEMINI_MCP_E2E_GEMINI"
	// EnvRequired set to 1 turns a missing EnvGemini into a failure.
	EnvRequired = "GEMINI_MCP_E2E_REQUIRED"
)

// RealCLI returns the path of the real Gemini CLI named by $GEMINI_MCP_E2E_GEMINI.
// When that is unset it skips the test, except in CI ($CI non-empty) or when
// $GEMINI_MCP_E2E_REQUIRED=1, where it fails it: such tests must never be
// skipped silently in CI.
func RealCLI(tb testing.TB) string {
	tb.Helper()
	path := os.Getenv(EnvGemini)
	if path == "" {
		msg := EnvGemini + " is not set: it must name the real Gemini CLI " +
			"(e.g. npm install --prefix DIR @google/gemini-cli@0.61.0; " + EnvGemini + "=DIR/node_modules/.bin/gemini)"
		if os.Getenv("CI") != "" || os.Getenv(EnvRequired) == "1" {
			tb.Fatalf("%s; required because CI or %s=1 is set", msg, EnvRequired)
		}
		tb.Skip(msg)
	}
	if _, err := os.Stat(path); err != nil {
		tb.Fatalf("%s: %v", EnvGemini, err)
	}
	return path
}
