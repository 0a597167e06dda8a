package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// Environment of the conformance client adapter: the test binary, run by
// the conformance suite as its client command, connects the real server's
// MCP host to the scenario's server (the last argument) with `mcp auth`.
const (
	// EnvConformanceClient, set to 1, makes the test binary the adapter.
	EnvConformanceClient = "GEMINI_MCP_TEST_CONFORMANCE_CLIENT"
	// EnvServerBin names the server binary for the adapter.
	EnvServerBin = "GEMINI_MCP_TEST_SERVER_BIN"
)

// conformanceClient is the adapter: it writes an mcpServers configuration
// naming the scenario's URL (with the pre-registered client the scenario's
// context gives, as oauth.clientId and clientSecret), and runs
// `gemini-mcp-server mcp auth conf` with the test binary as $BROWSER, which
// follows the authorization server's redirect to the host's callback. The
// host then lists the server's tools with the token it obtained.
func conformanceClient(serverURL string) int {
	dir, err := os.MkdirTemp("", "conformance-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "adapter:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	server := map[string]any{"httpUrl": serverURL, "trust": true}
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		json.Unmarshal([]byte(raw), &c)
	}
	if c.ClientID != "" {
		server["oauth"] = map[string]any{"enabled": true, "clientId": c.ClientID, "clientSecret": c.ClientSecret}
	}
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"conf": server}})
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "adapter:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := &adapter{cfg: cfg, state: filepath.Join(dir, "state")}
	if err := a.signIn(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "adapter:", err)
		return 1
	}
	// Gemini (the fake API) calls every tool; a call that needs a new
	// sign-in (the server asked for more scope) gets one, as a user
	// would do after reading the error, and is made again.
	for round := 1; ; round++ {
		needs, err := a.callTools(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "adapter:", err)
			return 1
		}
		if !needs {
			return 0
		}
		if round == 3 {
			fmt.Fprintln(os.Stderr, "adapter: the server still needs a sign-in after two")
			return 1
		}
		if err := a.signIn(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "adapter:", err)
			return 1
		}
	}
}

type adapter struct {
	cfg, state string
}

// signIn runs `mcp auth conf`.
func (a *adapter) signIn(ctx context.Context) error {
	// The suite's authorization server for basic-cimd accepts this URL
	// as a client ID (it fetches nothing).
	cmd := exec.CommandContext(ctx, os.Getenv(EnvServerBin), "mcp", "auth", "conf", "--mcp-config", a.cfg, "--state-dir", a.state,
		"--mcp-client-metadata-url", "https://conformance-test.local/client-metadata.json")
	cmd.Env = append(os.Environ(), "BROWSER="+os.Args[0], EnvBrowser+"=1", EnvConformanceClient+"=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mcp auth: %w", err)
	}
	return nil
}

// callTools runs the server on the API backend with the host, and has
// Gemini call each tool of the scenario's server once; it reports
// whether a call failed for want of a sign-in.
func (a *adapter) callTools(ctx context.Context) (bool, error) {
	api := fakeapi.New()
	defer api.Close()
	stderr := newSignalBuffer()
	cmd := exec.Command(os.Getenv(EnvServerBin), "--backend", "api", "--mcp-config", a.cfg, "--state-dir", a.state)
	cmd.Env = append(os.Environ(), "GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL="+api.URL(), EnvConformanceClient+"=")
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "conformance-adapter", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return false, err
	}
	defer cs.Close()
	defer func() { os.Stderr.WriteString(stderr.String()) }()
	if err := stderr.waitCtx(ctx, `msg="MCP server connected"`); err != nil {
		return false, err
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gemini-mcp://mcp-servers"})
	if err != nil {
		return false, err
	}
	var status struct {
		Servers []struct {
			Tools []struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &status); err != nil || len(status.Servers) != 1 {
		return false, fmt.Errorf("mcp-servers resource: %w", err)
	}
	needs := false
	for _, tool := range status.Servers[0].Tools {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[call:" + tool.Name + ":{}]]"}})
		if err != nil {
			return false, err
		}
		text := r.Content[0].(*mcp.TextContent).Text
		fmt.Fprintf(os.Stderr, "adapter: %s: %s\n", tool.Name, text)
		needs = needs || strings.Contains(text, "needs sign-in")
	}
	return needs, nil
}

// clientSuite is one version of the conformance suite whose client
// scenarios auth/* run against the host.
type clientSuite struct {
	name    string // the test's name for it
	pkg     string // its directory under node_modules
	skipped map[string]string
	refused map[string]*regexp.Regexp
}

// machineToMachine is why the scenarios of grants no user signs in with
// are not run; the go-sdk's conformance baseline skips the same.
const machineToMachine = "a grant for machines, not a user's sign-in (client credentials, enterprise-managed authorization, DPoP, workload identity): the go-sdk's own conformance baseline skips it"

var clientSuites = []clientSuite{
	{
		// The pinned suite of the server's own conformance test.
		name: "0.1.16", pkg: "@modelcontextprotocol/conformance",
		skipped: map[string]string{
			"auth/client-credentials-jwt":         machineToMachine,
			"auth/client-credentials-basic":       machineToMachine,
			"auth/cross-app-access-complete-flow": machineToMachine,
		},
		refused: map[string]*regexp.Regexp{
			// This version serves authorization server metadata at the
			// root whose issuer is <root>/oauth; the go-sdk refuses
			// metadata whose issuer is not the URL it was fetched for
			// (RFC 8414 §3.3), before registering. The next version's
			// scenario serves a matching issuer, and passes.
			"auth/2025-03-26-oauth-metadata-backcompat": regexp.MustCompile(`metadata issuer \\?"http://localhost:\d+/oauth\\?" does not match`),
		},
	},
	{
		// The version the go-sdk v1.8.0 runs its own client against
		// (npm alias conformance-next).
		name: "0.2.0-alpha.11", pkg: "conformance-next",
		skipped: map[string]string{
			"auth/client-credentials-jwt":           machineToMachine,
			"auth/client-credentials-basic":         machineToMachine,
			"auth/enterprise-managed-authorization": machineToMachine,
			"auth/dpop":                             machineToMachine,
			"auth/dpop-nonce":                       machineToMachine,
			"auth/wif-jwt-bearer":                   machineToMachine,
		},
	},
}

// TestConformanceClientAuth runs every client scenario auth/* of the
// official conformance suite, in two versions, against the MCP host
// (through the adapter above): each must pass with every check a
// SUCCESS, but those the suite lists as skipped or refused.
func TestConformanceClientAuth(t *testing.T) {
	tl := tools(t)
	t.Parallel()
	for _, suite := range clientSuites {
		t.Run(suite.name, func(t *testing.T) {
			t.Parallel()
			runClientSuite(t, tl, suite)
		})
	}
}

func runClientSuite(t *testing.T, tl npmTools, suite clientSuite) {
	index := tl.path(suite.pkg, "dist", "index.js")
	list := run(t, time.Minute, tl.env(t), t.TempDir(), tl.node, index, "list")
	var scenarios []string
	for line := range strings.Lines(list.stdout) {
		name, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")), " ")
		if strings.HasPrefix(name, "auth/") {
			scenarios = append(scenarios, name)
		}
	}
	if len(scenarios) < 15 {
		t.Fatalf("the suite lists %d auth scenarios:\n%s", len(scenarios), list.stdout)
	}
	for name := range suite.skipped {
		if !slices.Contains(scenarios, name) {
			t.Errorf("skipped names %s, which the suite does not have", name)
		}
	}
	env := append(tl.env(t), EnvConformanceClient+"=1", EnvServerBin+"="+serverBin)
	for _, name := range scenarios {
		if _, skip := suite.skipped[name]; skip {
			continue
		}
		t.Run(strings.TrimPrefix(name, "auth/"), func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			res := run(t, 3*time.Minute, env, t.TempDir(), tl.node, index, "client", "--command", os.Args[0], "--scenario", name, "-o", out)
			checks := readClientChecks(t, out, name)
			if checks == nil {
				t.Fatalf("no results for %s (exit %d)\n%s\n%s", name, res.code, res.stdout, res.stderr)
			}
			matches, _ := filepath.Glob(filepath.Join(out, name+"-*", "stderr.txt"))
			var adapterErr []byte
			if len(matches) == 1 {
				adapterErr, _ = os.ReadFile(matches[0])
			}
			if re, refused := suite.refused[name]; refused {
				if !re.Match(adapterErr) {
					t.Errorf("the host did not refuse the server as expected (%s)", re)
				}
				for _, c := range checks {
					if c.Status == "FAILURE" && !strings.HasPrefix(c.Description, "Expected Check Missing") {
						t.Errorf("%s: %s %s: %s", c.Status, c.ID, c.Description, c.ErrorMessage)
					}
				}
			} else {
				passed := 0
				for _, c := range checks {
					switch c.Status {
					case "SUCCESS":
						passed++
					case "FAILURE", "WARNING":
						t.Errorf("%s: %s %s: %s", c.Status, c.ID, c.Description, c.ErrorMessage)
					}
				}
				if passed == 0 || res.code != 0 {
					t.Errorf("%d checks passed, exit %d\n%s\n%s", passed, res.code, res.stdout, res.stderr)
				}
			}
			if t.Failed() {
				t.Logf("the adapter's stderr:\n%s", adapterErr)
			}
		})
	}
}

// readClientChecks reads the checks.json of the one client scenario run
// into out (its results go to out/auth/<scenario>-<time>/).
func readClientChecks(t *testing.T, out, name string) []check {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(out, name+"-*", "checks.json"))
	if len(matches) != 1 {
		return nil
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []check
	if err := json.Unmarshal(b, &checks); err != nil {
		t.Fatalf("checks.json: %v", err)
	}
	return checks
}
