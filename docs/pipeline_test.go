package docs

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyThePipelineRunsTurns keeps one way of running a turn, as
// architecture.md describes it: no package of the module but the turn
// pipeline (internal/conversation, Service.Do) calls the Run of a backend
// (backend.Backend, or any type that implements it), so that every
// tool's turn gets the same sessions, confirmations, queue and records.
// The backends themselves (internal/backend/...) wrap and fall back on
// one another's Run, and tests run backends directly; both are left out.
// Each package is type-checked from its source against the export data
// of its imports.
func TestOnlyThePipelineRunsTurns(t *testing.T) {
	mod := goCmd(t, "list", "-m")
	exports := map[string]string{}
	for _, line := range strings.Split(goCmd(t, "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", "./..."), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, os.ErrNotExist
		}
		return os.Open(file)
	})
	bpkg, err := imp.Import(mod + "/internal/backend")
	if err != nil {
		t.Fatal(err)
	}
	iface := bpkg.Scope().Lookup("Backend").Type().Underlying().(*types.Interface)
	isBackend := func(typ types.Type) bool {
		return types.Implements(typ, iface) || types.Implements(types.NewPointer(typ), iface)
	}
	exempt := func(path string) bool {
		return path == mod+"/internal/conversation" || path == mod+"/internal/backend" || strings.HasPrefix(path, mod+"/internal/backend/")
	}
	checked := 0
	for _, line := range strings.Split(goCmd(t, "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", "./..."), "\n") {
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) != 3 || fields[2] == "" || exempt(fields[0]) {
			continue
		}
		var files []*ast.File
		for _, name := range strings.Fields(fields[2]) {
			f, err := parser.ParseFile(fset, filepath.Join(fields[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(fields[0], fset, files, info); err != nil {
			t.Fatalf("type-checking %s: %v", fields[0], err)
		}
		checked++
		for sel, s := range info.Selections {
			if s.Kind() == types.MethodVal && sel.Sel.Name == "Run" && isBackend(s.Recv()) {
				t.Errorf("%s: %s calls a backend's Run: a turn runs only through the pipeline, conversation.Service.Do",
					fset.Position(sel.Pos()), fields[0])
			}
		}
	}
	if checked == 0 {
		t.Fatal("no package checked")
	}
}
