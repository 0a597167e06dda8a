package geminicli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// npmShim is the layout npm's cmd-shim writes for a JavaScript bin.
const npmShim = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\n" +
	"IF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\n" +
	"endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\node_modules\\@google\\gemini-cli\\dist\\index.js\" %*\r\n"

func TestParseCmdShim(t *testing.T) {
	t.Parallel()
	rel, ok := parseCmdShim(npmShim)
	if !ok || rel != `node_modules\@google\gemini-cli\dist\index.js` {
		t.Fatalf("got %q %v", rel, ok)
	}
	if _, ok := parseCmdShim("@echo off\r\ncall something.exe %*\r\n"); ok {
		t.Fatal("a non-npm batch file was taken for a shim")
	}
}

func TestResolveCmdShim(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shim := filepath.Join(dir, "gemini.cmd")
	if err := os.WriteFile(shim, []byte(npmShim), 0o644); err != nil {
		t.Fatal(err)
	}
	lookNode := func(name string) (string, error) {
		if name != "node" {
			t.Fatalf("looked up %q", name)
		}
		return "/usr/bin/node", nil
	}
	c, err := resolveCmdShim(shim, lookNode)
	if err != nil {
		t.Fatal(err)
	}
	wantScript := filepath.Join(dir, "node_modules", "@google", "gemini-cli", "dist", "index.js")
	if c.Path != "/usr/bin/node" || len(c.Args) != 1 || c.Args[0] != wantScript {
		t.Fatalf("got %+v", c)
	}
	// node.exe beside the shim wins over PATH, as in the shim itself.
	if err := os.WriteFile(filepath.Join(dir, "node.exe"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if c, err = resolveCmdShim(shim, lookNode); err != nil || c.Path != filepath.Join(dir, "node.exe") {
		t.Fatalf("got %+v %v", c, err)
	}
	noNode := func(string) (string, error) { return "", errors.New("not found") }
	os.Remove(filepath.Join(dir, "node.exe"))
	if _, err := resolveCmdShim(shim, noNode); err == nil || !strings.Contains(err.Error(), "needs node") {
		t.Fatalf("without node: %v", err)
	}
}

func TestResolveNotFound(t *testing.T) {
	t.Parallel()
	_, err := Resolve(filepath.Join(t.TempDir(), "no-such-gemini"))
	var e *backend.Error
	if !errors.As(err, &e) || e.Kind != backend.KindNotFound || !strings.Contains(e.Reason, "npm install -g @google/gemini-cli") || !strings.Contains(e.Reason, "--gemini") {
		t.Fatalf("got %v", err)
	}
	if _, err := Resolve("definitely-not-a-command-gemini-mcp"); !errors.As(err, &e) || e.Kind != backend.KindNotFound {
		t.Fatalf("PATH lookup: %v", err)
	}
}
