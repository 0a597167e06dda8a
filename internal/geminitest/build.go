package geminitest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FakePackage is the import path of the fake Gemini CLI's main package.
const FakePackage = "github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakegemini"

// BuildFake compiles the fake Gemini CLI into a new temporary directory and returns the path of
// the executable. The file is named gemini (gemini.exe on Windows), so putting its directory first
// in PATH makes it the gemini that a wrapper finds. cleanup removes the directory; call it once no
// process started from the executable is still running.
//
// BuildFake runs the go command found in PATH (go test puts its own first) in the current
// directory, which must lie inside this module; go test runs tests in their package's directory.
func BuildFake() (path string, cleanup func(), err error) {
	return buildTool("fake gemini", "fake-gemini-", "gemini", FakePackage)
}

// buildTool compiles pkg into a new temporary directory (named from
// tempPrefix) as the executable name (name.exe on Windows); what names the
// tool in errors. cleanup removes the directory.
func buildTool(what, tempPrefix, name, pkg string) (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return "", nil, fmt.Errorf("building %s: %w", what, err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	path = filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", path, pkg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building %s: go build %s: %w\n%s", what, pkg, err, out.Bytes())
	}
	return path, cleanup, nil
}

// RunWithFake builds the fake Gemini CLI, stores the executable's path in *path, runs the tests
// and removes the executable again. It returns the exit code for os.Exit; when the build fails it
// prints why on stderr and returns 1 without running any test. Use it from TestMain:
//
//	var fakeGemini string
//
//	func TestMain(m *testing.M) { os.Exit(geminitest.RunWithFake(m, &fakeGemini)) }
func RunWithFake(m *testing.M, path *string) int {
	built, cleanup, err := BuildFake()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	*path = built
	return m.Run()
}

// ServerPackage is the import path of the server's main package.
const ServerPackage = "github.com/gemini-mcp-server/gemini-mcp-server/cmd/gemini-mcp-server"

// BuildServer compiles the server into bin, with the race detector when
// race is set (tests pass whether they run under -race, so that the traffic
// of the clients they drive is checked too), and with any further go build
// flags. Like BuildFake, it runs in the current directory, inside this
// module.
func BuildServer(bin string, race bool, flags ...string) error {
	args := append([]string{"build", "-o", bin}, flags...)
	if race {
		args = append(args, "-race")
	}
	args = append(args, ServerPackage)
	cmd := exec.Command("go", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the server: go %s: %w\n%s", strings.Join(args, " "), err, out.Bytes())
	}
	return nil
}

// BuildTestServer builds the server into a new temporary directory for a
// suite's TestMain, with the race detector when the suite runs under it
// ([RaceEnabled]), and says on stderr how long that took (suite names the
// suite there). cleanup removes the directory.
func BuildTestServer(suite string) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "gmcp-"+suite+"-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("building the server: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, "gemini-mcp-server")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	start := time.Now()
	if err := BuildServer(bin, RaceEnabled); err != nil {
		cleanup()
		return "", nil, err
	}
	fmt.Fprintf(os.Stderr, "%s: built the server (race=%v) in %v\n", suite, RaceEnabled, time.Since(start).Round(time.Millisecond))
	return bin, cleanup, nil
}
