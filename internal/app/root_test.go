package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

type parsedFile struct {
	file *ast.File
	fset *token.FileSet
}

// appFiles parses app's non-test files, by name.
func appFiles(t *testing.T) map[string]parsedFile {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]parsedFile{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = parsedFile{f, fset}
	}
	if len(files) == 0 {
		t.Fatal("no files parsed")
	}
	return files
}

// TestAppHoldsNoTransport: app wires the transports that internal/server
// implements and holds none itself: no file of it names the SDK's
// transports or HTTP handlers, and none declares a reader (the stdio
// line filter's kind).
func TestAppHoldsNoTransport(t *testing.T) {
	for name, pf := range appFiles(t) {
		f, fset := pf.file, pf.fset
		mcpName := ""
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "github.com/modelcontextprotocol/go-sdk/mcp" {
				mcpName = "mcp"
				if imp.Name != nil {
					mcpName = imp.Name.Name
				}
			}
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil && fn.Name.Name == "Read" {
				t.Errorf("%s: %s declares a Read method: reading the transport is internal/server's", name, fset.Position(fn.Pos()))
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == mcpName && mcpName != "" &&
				(strings.HasSuffix(sel.Sel.Name, "Transport") || strings.HasSuffix(sel.Sel.Name, "Handler")) {
				t.Errorf("%s: %s uses mcp.%s: transports are internal/server's", name, fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// TestAppDigsNothingOutOfTheBackend: what the backend builder builds (the
// MCP host, the token counter) it returns; nothing in app finds it again
// by unwrapping the backend.
func TestAppDigsNothingOutOfTheBackend(t *testing.T) {
	for name, f := range appFiles(t) {
		ast.Inspect(f.file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if n.Sel.Name == "Unwrap" {
					t.Errorf("%s: %s unwraps a value", name, f.fset.Position(n.Pos()))
				}
			case *ast.FuncDecl:
				if n.Name.Name == "Unwrap" {
					t.Errorf("%s: %s declares Unwrap", name, f.fset.Position(n.Pos()))
				}
			case *ast.InterfaceType:
				for _, m := range n.Methods.List {
					for _, id := range m.Names {
						if id.Name == "Unwrap" {
							t.Errorf("%s: %s asks for an Unwrap method", name, f.fset.Position(id.Pos()))
						}
					}
				}
			}
			return true
		})
	}
}

// TestAppBuildsStructsComplete: app sets no exported field of a value
// after building it (its options, its services, the IO it was given): each
// is complete when made. Left are the tools' dependencies that the
// transport sets before the tools are registered, and the rate limiter's
// store and log, which its constructor does not take.
func TestAppBuildsStructsComplete(t *testing.T) {
	allowed := map[string]bool{"deps.Lifetime": true, "deps.RequestContext": true, "deps.Files": true,
		"limiter.Shared": true, "limiter.Log": true}
	for name, f := range appFiles(t) {
		ast.Inspect(f.file, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || as.Tok != token.ASSIGN {
				return true
			}
			for _, lhs := range as.Lhs {
				sel, ok := lhs.(*ast.SelectorExpr)
				if !ok || !sel.Sel.IsExported() {
					continue
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok {
					continue
				}
				if field := x.Name + "." + sel.Sel.Name; !allowed[field] {
					t.Errorf("%s: %s sets %s after it was built", name, f.fset.Position(sel.Pos()), field)
				}
			}
			return true
		})
	}
}
