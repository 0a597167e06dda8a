package docs

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// TestConfigurationTable checks configuration.md's table against the
// flags --help lists: every flag has a row and every row a flag, and each
// row names the environment variable the help gives the flag.
func TestConfigurationTable(t *testing.T) {
	var help bytes.Buffer
	if _, err := config.Parse("gemini-mcp-server", "", []string{"--help"}, func(string) string { return "" }, &help, config.Rules{}); !errors.Is(err, config.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	// The flag package lists each flag as "  -name [type]", its usage on
	// the lines after it, indented by a tab.
	helpEnv := map[string][]string{}
	var current string
	flagLine := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	envVar := regexp.MustCompile(`\((GEMINI_MCP_[A-Z0-9_]+)\)`)
	for _, line := range strings.Split(help.String(), "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			current = m[1]
			helpEnv[current] = nil
			continue
		}
		if current != "" && strings.HasPrefix(line, "    \t") {
			for _, m := range envVar.FindAllStringSubmatch(line, -1) {
				helpEnv[current] = append(helpEnv[current], m[1])
			}
		}
	}
	if len(helpEnv) < 20 {
		t.Fatalf("--help listed only %d flags:\n%s", len(helpEnv), help.String())
	}

	b, err := os.ReadFile("configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `--([a-z0-9-]+)[^`]*` \\| ([^|]*) \\|")
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("configuration.md has two rows for --%s", m[1])
		}
		rows[m[1]] = m[2]
	}
	for name, envs := range helpEnv {
		cell, ok := rows[name]
		if !ok {
			t.Errorf("--%s is in --help but has no row in configuration.md", name)
			continue
		}
		for _, env := range envs {
			if !strings.Contains(cell, "`"+env+"`") {
				t.Errorf("--%s: --help names %s, configuration.md's row says %q", name, env, cell)
			}
		}
	}
	for name := range rows {
		if _, ok := helpEnv[name]; !ok {
			t.Errorf("configuration.md has a row for --%s, which --help does not list", name)
		}
	}
}
