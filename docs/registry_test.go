package docs

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/apicreds"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/google/jsonschema-go/jsonschema"
)

// registryName is the server's name in the MCP Registry: server.json's
// name, the mcpName field of the npm package's package.json and the
// io.modelcontextprotocol.server.name label of the container image, by
// which the registry checks that the packages belong to the server.
const registryName = "io.github.gemini-mcp-server/gemini-mcp-server"

// npmPackage is the npm package server.json names, run with npx.
const npmPackage = "gemini-mcp-server"

// The registry's schema of server.json, pinned: the copy of
// https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json
// that github.com/modelcontextprotocol/registry v1.8.8 embeds
// (internal/validators/schemas/2025-12-11.json). testdata/registry/README.md
// says how to move to a newer one.
const (
	serverSchemaFile   = "testdata/registry/server.schema.json"
	serverSchemaSHA256 = "2e1e2dc758185bfc91023df4e5ace0e1c1bdb7b7b3d6614bb9ac6b9e9a9c2f68"
)

// ociRegistries are the container registries the MCP Registry accepts
// images from (besides *.pkg.dev and *.azurecr.io, which this project
// does not use).
var ociRegistries = []string{"docker.io", "ghcr.io", "quay.io", "mcr.microsoft.com"}

// semver is a release version as server.json and the npm package carry
// it: the release tag (vX.Y.Z, which go install and the Go module proxy
// need) without its v.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// secretName matches the variables that hold secrets: keys, tokens and
// client secrets (not GEMINI_MCP_TOKEN_FILE, a path).
var secretName = regexp.MustCompile(`(_KEY|_TOKENS|_SECRET)$`)

// The shape of server.json, as far as the schema defines it: decoding with
// unknown fields refused catches a misspelt field, which the schema lets
// through (it allows any other property).
type (
	srvJSON struct {
		Schema      string          `json:"$schema"`
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		Repository  *srvRepository  `json:"repository"`
		Version     string          `json:"version"`
		WebsiteURL  string          `json:"websiteUrl"`
		Icons       json.RawMessage `json:"icons"`
		Packages    []srvPackage    `json:"packages"`
		Remotes     json.RawMessage `json:"remotes"`
		Meta        json.RawMessage `json:"_meta"`
	}
	srvRepository struct {
		URL       string `json:"url"`
		Source    string `json:"source"`
		ID        string `json:"id"`
		Subfolder string `json:"subfolder"`
	}
	srvPackage struct {
		RegistryType         string        `json:"registryType"`
		RegistryBaseURL      string        `json:"registryBaseUrl"`
		Identifier           string        `json:"identifier"`
		Version              string        `json:"version"`
		FileSHA256           string        `json:"fileSha256"`
		RuntimeHint          string        `json:"runtimeHint"`
		Transport            srvTransport  `json:"transport"`
		RuntimeArguments     []srvArgument `json:"runtimeArguments"`
		PackageArguments     []srvArgument `json:"packageArguments"`
		EnvironmentVariables []srvInput    `json:"environmentVariables"`
	}
	srvTransport struct {
		Type    string     `json:"type"`
		URL     string     `json:"url"`
		Headers []srvInput `json:"headers"`
	}
	srvInput struct {
		Name        string              `json:"name"`
		Description string              `json:"description"`
		Value       string              `json:"value"`
		Default     string              `json:"default"`
		Placeholder string              `json:"placeholder"`
		Format      string              `json:"format"`
		Choices     []string            `json:"choices"`
		IsRequired  bool                `json:"isRequired"`
		IsSecret    bool                `json:"isSecret"`
		Variables   map[string]srvInput `json:"variables"`
	}
	srvArgument struct {
		srvInput
		Type       string `json:"type"`
		ValueHint  string `json:"valueHint"`
		IsRepeated bool   `json:"isRepeated"`
	}
)

// registryFacts is what server.json is checked against.
type registryFacts struct {
	schema      *jsonschema.Resolved
	schemaID    string
	module      string            // the module path, github.com/OWNER/NAME
	reads       map[string]bool   // the variables the server reads
	envDefaults map[string]string // a flag's variable → the default --help shows
}

func loadRegistryFacts(t *testing.T) *registryFacts {
	t.Helper()
	raw, err := os.ReadFile(serverSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256(raw)); sum != serverSchemaSHA256 {
		t.Fatalf("%s has SHA-256 %s, not the pinned %s: it is the registry's file, copied unchanged (see testdata/registry/README.md)", serverSchemaFile, sum, serverSchemaSHA256)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", serverSchemaFile, err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", serverSchemaFile, err)
	}
	f := &registryFacts{schema: resolved, schemaID: s.ID, reads: map[string]bool{}, envDefaults: map[string]string{}}

	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(gomod); m != nil {
		f.module = string(m[1])
	}
	if !strings.HasPrefix(f.module, "github.com/") || strings.Count(f.module, "/") != 2 {
		t.Fatalf("go.mod's module path %q is not github.com/OWNER/NAME", f.module)
	}

	// The variables the server reads are the ones parsing its
	// configuration asks for, and the ones the API backend's credentials
	// (and the Gemini CLI's: GEMINI_API_KEY, GOOGLE_*) are read from, in
	// each of the ways they can be given.
	record := func(env map[string]string) func(string) string {
		return func(k string) string { f.reads[k] = true; return env[k] }
	}
	_, _ = config.Parse("gemini-mcp-server", "", nil, record(nil), io.Discard, config.Rules{})
	for _, env := range []map[string]string{
		{},
		{"GOOGLE_GENAI_USE_VERTEXAI": "true"},
		{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p"},
	} {
		apicreds.Read(record(env))
	}
	for _, want := range []string{"GEMINI_API_KEY", "GEMINI_MCP_BACKEND", "GEMINI_MCP_TOKENS", "GOOGLE_CLOUD_PROJECT"} {
		if !f.reads[want] {
			t.Fatalf("recording what the server reads missed %s: %v", want, f.reads)
		}
	}
	for _, fl := range config.Flags() {
		if fl.Env != "" {
			f.envDefaults[fl.Env] = fl.Default
		}
	}
	return f
}

// check returns what is wrong with raw as the server.json of this
// server: what the registry's schema refuses, and what the registry
// checks on publishing or a user would trip over that the schema cannot
// see.
func (f *registryFacts) check(raw []byte) error {
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := f.schema.Validate(inst); err != nil {
		return fmt.Errorf("the registry's schema refuses it: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s srvJSON
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("a field the schema does not define (misspelt?): %w", err)
	}

	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Schema != f.schemaID {
		bad("$schema is %q, not the pinned schema's %q", s.Schema, f.schemaID)
	}
	owner, repo, _ := strings.Cut(strings.TrimPrefix(f.module, "github.com/"), "/")
	if want := "io.github." + owner + "/" + repo; s.Name != want || s.Name != registryName {
		bad("name is %q: the registry takes io.github.OWNER/NAME of the GitHub repository, %q (and registryName must say the same)", s.Name, want)
	}
	if s.Repository == nil || s.Repository.URL != "https://"+f.module || s.Repository.Source != "github" {
		bad("repository is %+v, not {url: https://%s, source: github}", s.Repository, f.module)
	}
	if !semver.MatchString(s.Version) {
		bad("version %q is not a release version: X.Y.Z[-pre], the tag vX.Y.Z without its v", s.Version)
	}

	var sawNPM, sawOCI bool
	for i, p := range s.Packages {
		where := fmt.Sprintf("packages[%d] (%s %s)", i, p.RegistryType, p.Identifier)
		switch p.RegistryType {
		case "npm":
			sawNPM = true
			if p.Identifier != npmPackage {
				bad("%s: the npm package is %s", where, npmPackage)
			}
			if p.RegistryBaseURL != "" && p.RegistryBaseURL != "https://registry.npmjs.org" {
				bad("%s: registryBaseUrl %q: the registry takes npm packages from https://registry.npmjs.org only", where, p.RegistryBaseURL)
			}
			if p.Version != s.Version {
				bad("%s: version %q, not the server's %q: the npm package is released with the server", where, p.Version, s.Version)
			}
			if p.RuntimeHint != "npx" || p.Transport.Type != "stdio" {
				bad("%s: runtimeHint %q, transport %q: it runs with npx over stdio", where, p.RuntimeHint, p.Transport.Type)
			}
		case "oci":
			sawOCI = true
			if p.Version != "" || p.RegistryBaseURL != "" || p.FileSHA256 != "" {
				bad("%s: an image names its registry and version in identifier only; the registry refuses version, registryBaseUrl and fileSha256", where)
			}
			image, tag, _ := strings.Cut(p.Identifier, ":")
			host, path, _ := strings.Cut(image, "/")
			if !slices.Contains(ociRegistries, host) {
				bad("%s: registry %q is not one the MCP Registry accepts (%v)", where, host, ociRegistries)
			}
			if path != strings.TrimPrefix(f.module, "github.com/") {
				bad("%s: image %q, want %s/%s", where, path, host, strings.TrimPrefix(f.module, "github.com/"))
			}
			if tag != s.Version {
				bad("%s: tag %q, not the server's version %q", where, tag, s.Version)
			}
		default:
			bad("%s: an unexpected registry type", where)
		}
		errs = append(errs, f.checkTransport(where, p))
		seen := map[string]bool{}
		for _, v := range p.EnvironmentVariables {
			if seen[v.Name] {
				bad("%s: %s is listed twice", where, v.Name)
			}
			seen[v.Name] = true
			errs = append(errs, f.checkVariable(where, v))
		}
	}
	if !sawNPM || !sawOCI {
		bad("packages: want the npm package and the container image, found npm %v, oci %v", sawNPM, sawOCI)
	}
	return errors.Join(errs...)
}

// checkTransport checks a package's transport as the registry does: stdio
// has no URL; an HTTP URL's {variables} are the package's arguments or
// environment variables.
func (f *registryFacts) checkTransport(where string, p srvPackage) error {
	t := p.Transport
	switch t.Type {
	case "stdio":
		if t.URL != "" {
			return fmt.Errorf("%s: a stdio transport has no url (%q)", where, t.URL)
		}
		return nil
	case "streamable-http", "sse":
	default:
		return fmt.Errorf("%s: transport %q is not stdio, streamable-http or sse", where, t.Type)
	}
	known := map[string]bool{}
	for _, v := range p.EnvironmentVariables {
		known[v.Name] = true
	}
	for _, a := range slices.Concat(p.RuntimeArguments, p.PackageArguments) {
		known[a.Name], known[a.ValueHint] = true, true
	}
	for _, m := range regexp.MustCompile(`\{([^{}]*)\}`).FindAllStringSubmatch(t.URL, -1) {
		if m[1] == "" || !known[m[1]] {
			return fmt.Errorf("%s: url %q names {%s}, which is no argument or variable of the package", where, t.URL, m[1])
		}
	}
	for _, h := range t.Headers {
		if h.Name == "Authorization" && !h.IsSecret {
			return fmt.Errorf("%s: the Authorization header carries a token: isSecret", where)
		}
	}
	return nil
}

// checkVariable checks an environment variable of a package: the server
// reads it, a secret is marked isSecret, and a default is the flag's.
func (f *registryFacts) checkVariable(where string, v srvInput) error {
	var errs []error
	if !f.reads[v.Name] {
		errs = append(errs, fmt.Errorf("%s: the server does not read %s (neither a flag's variable nor one of the credentials)", where, v.Name))
	}
	if secretName.MatchString(v.Name) && !v.IsSecret {
		errs = append(errs, fmt.Errorf("%s: %s holds a secret: isSecret", where, v.Name))
	}
	if v.Default != "" {
		if def, ok := f.envDefaults[v.Name]; ok && def != v.Default {
			errs = append(errs, fmt.Errorf("%s: %s defaults to %q, --help says %q", where, v.Name, v.Default, def))
		}
		if len(v.Choices) > 0 && !slices.Contains(v.Choices, v.Default) {
			errs = append(errs, fmt.Errorf("%s: %s's default %q is not among its choices %v", where, v.Name, v.Default, v.Choices))
		}
	}
	if v.Description == "" {
		errs = append(errs, fmt.Errorf("%s: %s has no description", where, v.Name))
	}
	return errors.Join(errs...)
}

// TestServerJSON validates server.json, the server's MCP Registry entry,
// against the registry's pinned schema and checks what the registry and
// its users rely on beyond it.
func TestServerJSON(t *testing.T) {
	f := loadRegistryFacts(t)
	raw, err := os.ReadFile(filepath.Join(root, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.check(raw); err != nil {
		t.Errorf("server.json:\n%v", err)
	}
}

// TestServerJSONRefusesBroken shows that the check fails on broken
// entries, each of which the schema or the registry would refuse, or that
// would list something untrue.
func TestServerJSONRefusesBroken(t *testing.T) {
	f := loadRegistryFacts(t)
	raw, err := os.ReadFile(filepath.Join(root, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := func(m map[string]any, kind string) map[string]any {
		for _, p := range m["packages"].([]any) {
			if p := p.(map[string]any); p["registryType"] == kind {
				return p
			}
		}
		t.Fatalf("server.json has no %s package", kind)
		return nil
	}
	env := func(p map[string]any, name string) map[string]any {
		for _, v := range p["environmentVariables"].([]any) {
			if v := v.(map[string]any); v["name"] == name {
				return v
			}
		}
		t.Fatalf("%s package has no %s", p["registryType"], name)
		return nil
	}
	for _, c := range []struct {
		name  string
		edit  func(m map[string]any)
		wants string
	}{
		{"no description", func(m map[string]any) { delete(m, "description") }, "schema refuses"},
		{"description over 100 characters", func(m map[string]any) { m["description"] = strings.Repeat("x", 101) }, "schema refuses"},
		{"name not namespace/name", func(m map[string]any) { m["name"] = "gemini mcp server" }, "schema refuses"},
		{"transport the schema lacks", func(m map[string]any) { pkg(m, "npm")["transport"] = map[string]any{"type": "websocket"} }, "schema refuses"},
		{"isSecret not a boolean", func(m map[string]any) { env(pkg(m, "npm"), "GEMINI_API_KEY")["isSecret"] = "yes" }, "schema refuses"},
		{"http transport without url", func(m map[string]any) { delete(pkg(m, "oci")["transport"].(map[string]any), "url") }, "schema refuses"},
		{"misspelt field", func(m map[string]any) { env(pkg(m, "npm"), "GEMINI_API_KEY")["isSecrect"] = true }, "misspelt"},
		{"schema not the pinned one", func(m map[string]any) {
			m["$schema"] = "https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json"
		}, "not the pinned schema"},
		{"name of another owner", func(m map[string]any) { m["name"] = "io.github.someone/gemini-mcp-server" }, "io.github.OWNER/NAME"},
		{"version with its v", func(m map[string]any) { m["version"] = "v0.1.0" }, "not a release version"},
		{"npm version not the server's", func(m map[string]any) { pkg(m, "npm")["version"] = "0.0.9" }, "released with the server"},
		{"npm package of another name", func(m map[string]any) { pkg(m, "npm")["identifier"] = "@someone/gemini" }, "the npm package is"},
		{"image with a version field", func(m map[string]any) { pkg(m, "oci")["version"] = "0.1.0" }, "refuses version"},
		{"image tag not the version", func(m map[string]any) {
			pkg(m, "oci")["identifier"] = "ghcr.io/gemini-mcp-server/gemini-mcp-server:latest"
		}, "tag"},
		{"image from an unaccepted registry", func(m map[string]any) {
			pkg(m, "oci")["identifier"] = "registry.example.com/gemini-mcp-server/gemini-mcp-server:0.1.0"
		}, "not one the MCP Registry accepts"},
		{"url naming an unknown variable", func(m map[string]any) {
			pkg(m, "oci")["transport"].(map[string]any)["url"] = "http://127.0.0.1:{port}/mcp"
		}, "{port}"},
		{"variable the server does not read", func(m map[string]any) { env(pkg(m, "npm"), "GEMINI_MCP_MODEL")["name"] = "GEMINI_MCP_MODEL_NAME" }, "does not read GEMINI_MCP_MODEL_NAME"},
		{"secret not marked", func(m map[string]any) { env(pkg(m, "oci"), "GEMINI_MCP_TOKENS")["isSecret"] = false }, "holds a secret"},
		{"default not the flag's", func(m map[string]any) { env(pkg(m, "npm"), "GEMINI_MCP_BACKEND")["default"] = "warm" }, "--help says"},
		{"no container image", func(m map[string]any) { m["packages"] = m["packages"].([]any)[:1] }, "found npm true, oci false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			c.edit(m)
			broken, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			err = f.check(broken)
			if err == nil {
				t.Fatalf("accepted:\n%s", broken)
			}
			t.Logf("refused: %v", err)
			if !strings.Contains(err.Error(), c.wants) {
				t.Errorf("refused, but not for %q:\n%v", c.wants, err)
			}
		})
	}
}

// TestRegistryNameInPackages checks that the packages server.json names
// carry the server's name where the registry looks for it: the npm
// package's package.json its mcpName, a container build file its
// io.modelcontextprotocol.server.name label.
func TestRegistryNameInPackages(t *testing.T) {
	var found []string
	label := regexp.MustCompile(`io\.modelcontextprotocol\.server\.name"?\s*=\s*"?([^"\s]+)`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case name == "package.json":
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var pj struct {
				Name    string `json:"name"`
				MCPName string `json:"mcpName"`
			}
			if err := json.Unmarshal(b, &pj); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if pj.Name != npmPackage {
				return nil // a platform package or a test fixture
			}
			found = append(found, p)
			if pj.MCPName != registryName {
				t.Errorf("%s: mcpName is %q; the MCP Registry wants %q, server.json's name", p, pj.MCPName, registryName)
			}
		case name == "Containerfile" || name == "Dockerfile" || strings.HasSuffix(name, ".Containerfile") || strings.HasSuffix(name, ".Dockerfile"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			found = append(found, p)
			if m := label.FindSubmatch(b); m == nil || string(m[1]) != registryName {
				t.Errorf("%s: no LABEL io.modelcontextprotocol.server.name=%q, which the MCP Registry checks the image for", p, registryName)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The npm package server.json names is made from this template
	// (scripts/npmpack): it must be found, or the check above proved
	// nothing.
	if launcher := filepath.Join(root, "npm", npmPackage, "package.json"); !slices.Contains(found, launcher) {
		t.Errorf("%s, the template of the npm package %s, is missing or names another package; checked: %v", launcher, npmPackage, found)
	}
	t.Logf("checked: %v", found)
}
