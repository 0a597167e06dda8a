package geminicli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// Command is the resolved way to start the CLI: an executable and the
// arguments that come before the CLI's own.
type Command struct {
	Path string
	Args []string
}

// String shows the command as a person would type it.
func (c Command) String() string {
	return strings.Join(append([]string{c.Path}, c.Args...), " ")
}

// Resolver finds the CLI, reusing its last answer while that file
// exists: a PATH search per call costs more than the one stat that checks
// the cached path. It is safe for concurrent use.
type Resolver struct {
	name     string
	resolved atomic.Pointer[Command]
}

// NewResolver returns a Resolver for the executable name (see Resolve).
func NewResolver(name string) *Resolver { return &Resolver{name: name} }

// Command finds the CLI, reusing the last answer while its file exists.
func (r *Resolver) Command() (Command, error) {
	if c := r.resolved.Load(); c != nil {
		if _, err := os.Stat(c.Path); err == nil {
			return *c, nil
		}
	}
	c, err := Resolve(r.name)
	if err != nil {
		r.resolved.Store(nil)
		return Command{}, err
	}
	r.resolved.Store(&c)
	return c, nil
}

// Resolve finds the gemini executable named by name (a bare name looked up
// in PATH, or a path). On Windows, npm installs the CLI as a `gemini.cmd`
// batch shim; running it would route the prompt through cmd.exe's argument
// parsing, which no quoting makes safe for arbitrary text. The shim is
// therefore resolved to `node <the CLI's script>`, which takes its
// arguments verbatim.
func Resolve(name string) (Command, error) {
	if name == "" {
		name = "gemini"
	}
	path, err := proc.LookPath(name)
	if err != nil {
		if errors.Is(err, proc.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return Command{}, NotFoundError(fmt.Sprintf("the gemini CLI was not found (looked for %q). %s", name, InstallHelp), err)
		}
		return Command{}, NotFoundError(fmt.Sprintf("the gemini CLI %q cannot be run: %v. %s", name, err, InstallHelp), err)
	}
	if runtime.GOOS == "windows" && isBatch(path) {
		return resolveCmdShim(path, proc.LookPath)
	}
	return Command{Path: path}, nil
}

func isBatch(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".cmd" || ext == ".bat"
}

// shimScriptRE finds the script path in an npm cmd-shim: the quoted
// argument relative to the shim's own directory (%dp0% or %~dp0).
var shimScriptRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"%~?dp0%?\\([^"%]+)"`) })

// parseCmdShim returns the script path, relative to the shim's directory,
// that an npm cmd-shim runs with node.
func parseCmdShim(content string) (string, bool) {
	for _, m := range shimScriptRE().FindAllStringSubmatch(content, -1) {
		rel := m[1]
		if strings.EqualFold(filepath.Base(strings.ReplaceAll(rel, `\`, "/")), "node.exe") {
			continue
		}
		return rel, true
	}
	return "", false
}

// resolveCmdShim turns an npm cmd-shim into node plus the script it runs.
// lookPath is proc.LookPath, replaceable in tests.
func resolveCmdShim(shim string, lookPath func(string) (string, error)) (Command, error) {
	data, err := os.ReadFile(shim)
	if err != nil {
		return Command{}, NotFoundError(fmt.Sprintf("cannot read the gemini shim %s: %v. %s", shim, err, InstallHelp), err)
	}
	rel, ok := parseCmdShim(string(data))
	if !ok {
		return Command{}, NotFoundError(fmt.Sprintf(
			"%s is a batch file but not an npm shim this server understands, and running it through cmd.exe would not pass prompts safely. "+
				"Install the CLI with npm (npm install -g @google/gemini-cli), whose gemini.cmd shim this server reads", shim), nil)
	}
	dir := filepath.Dir(shim)
	script := filepath.Join(dir, filepath.FromSlash(strings.ReplaceAll(rel, `\`, "/")))
	node := filepath.Join(dir, "node.exe")
	if _, err := os.Stat(node); err != nil {
		node, err = lookPath("node")
		if err != nil {
			return Command{}, NotFoundError(fmt.Sprintf(
				"the gemini shim %s needs node, which was not found in PATH: %v. Install Node.js 20 or newer", shim, err), err)
		}
	}
	return Command{Path: node, Args: []string{script}}, nil
}
