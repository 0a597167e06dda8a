package config

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDefaultsAreDefinedOnce: no package of the module keeps its own copy
// of a default defined here — a constant named as one of these (less the
// area: DefaultTTL for DefaultSessionTTL) with the same value. A package
// whose zero value means "the default" reads it from here.
func TestDefaultsAreDefinedOnce(t *testing.T) {
	mine := constants(t, ".")
	root := filepath.Join("..", "..")
	var dirs []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") ||
			path == filepath.Join(root, "internal", "config") {
			return filepath.SkipDir
		}
		dirs = append(dirs, path)
		return nil
	})
	if len(dirs) < 10 {
		t.Fatalf("found only %d directories under %s", len(dirs), root)
	}
	checked := 0
	for _, dir := range dirs {
		for name, v := range constants(t, dir) {
			checked++
			for mineName, mv := range mine {
				if area(name) == area(mineName) && constant.Compare(v, token.EQL, mv) {
					t.Errorf("%s declares %s = %s, a copy of config.%s: use config's", dir, name, v, mineName)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no Default constants outside config")
	}
}

// area is a default's name less "Default" and the area it belongs to.
func area(name string) string {
	name = strings.TrimPrefix(name, "Default")
	for _, a := range []string{"Warm", "Session", "Store", "Expert", "Context"} {
		name = strings.Replace(name, a, "", 1)
	}
	return name
}

// constants are the constants named Default… that dir's non-test files
// declare, with the values that can be worked out from the file alone.
func constants(t *testing.T, dir string) map[string]constant.Value {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]constant.Value{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Default") || i >= len(vs.Values) {
						continue
					}
					if v := eval(vs.Values[i]); v != nil {
						out[n.Name] = v
					}
				}
			}
		}
	}
	return out
}

// eval works out a constant expression of literals and time's units;
// nil when it names anything else.
func eval(e ast.Expr) constant.Value {
	switch e := e.(type) {
	case *ast.BasicLit:
		return constant.MakeFromLiteral(e.Value, e.Kind, 0)
	case *ast.ParenExpr:
		return eval(e.X)
	case *ast.SelectorExpr:
		units := map[string]time.Duration{"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
			"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" {
			if u, ok := units[e.Sel.Name]; ok {
				return constant.MakeInt64(int64(u))
			}
		}
	case *ast.BinaryExpr:
		x, y := eval(e.X), eval(e.Y)
		if x == nil || y == nil {
			return nil
		}
		if e.Op == token.SHL || e.Op == token.SHR {
			s, ok := constant.Uint64Val(y)
			if !ok {
				return nil
			}
			return constant.Shift(x, e.Op, uint(s))
		}
		if e.Op == token.QUO && x.Kind() == constant.Int && y.Kind() == constant.Int {
			return constant.BinaryOp(x, token.QUO_ASSIGN, y) // integer division, as Go's
		}
		return constant.BinaryOp(x, e.Op, y)
	}
	return nil
}

// TestFlagsShowTheirDefaults: Parse without flags or variables gives
// every field its spec's default, and --help shows it.
func TestFlagsShowTheirDefaults(t *testing.T) {
	c, err := Parse("x", "", nil, envOf(nil), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{}
	for _, f := range Flags() {
		shown[f.Name] = f.Default
	}
	for _, s := range flags {
		if s.def == nil {
			continue
		}
		got := reflect.ValueOf(s.field(c)).Elem().Interface()
		if s.name == "max-body-bytes" {
			continue // sized from --max-prompt-bytes when left at 0
		}
		if !reflect.DeepEqual(reflect.ValueOf(got).Convert(reflect.TypeOf(s.def)).Interface(), s.def) {
			t.Errorf("--%s: Parse gives %v, the spec's default is %v", s.name, got, s.def)
		}
		if s.name == "" {
			continue
		}
		if reflect.ValueOf(s.def).IsZero() {
			if shown[s.name] != "" {
				t.Errorf("--%s: a zero default shown as %q", s.name, shown[s.name])
			}
		} else if shown[s.name] == "" {
			t.Errorf("--%s: default %v not shown in --help", s.name, s.def)
		}
	}
}
