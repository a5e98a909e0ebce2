package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// wired are the parts only the composition root (package app) builds:
// by package, the types whose values it makes.
var wired = map[string]string{"service": "Service", "courier": "Courier", "dispatch": "Dispatcher", "lifecycle": "Manager"}

// notWiring are the literals of those types outside app that are not
// wiring, each with why.
var notWiring = map[string]string{
	// A heartbeat writes the registry only: a Manager over the store, for
	// one call, so that it never needs tmux.
	"service/lifecycle.go: lifecycle.Manager": "a heartbeat needs the mailbox only",
}

// Outside tests, the wiring is built in one place: no code but package app
// makes a service.Service, a courier, a dispatcher or a lifecycle manager
// (ARCHITECTURE.md, "Rules that keep it this way").
func TestOneCompositionRoot(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch path {
			case "app", "e2e", "tools", "scripts", "docs":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			var name string
			switch typ := lit.Type.(type) {
			case *ast.SelectorExpr:
				if x, ok := typ.X.(*ast.Ident); ok && wired[x.Name] == typ.Sel.Name {
					name = x.Name + "." + typ.Sel.Name
				}
			case *ast.Ident:
				// The package's own type is its own to make (a courier's
				// copy over another dispatcher), except a Service.
				if pkg == "service" && typ.Name == "Service" {
					name = "service.Service"
				}
			}
			if name == "" {
				return true
			}
			key := filepath.ToSlash(path) + ": " + name
			if _, ok := notWiring[key]; !ok {
				t.Errorf("%s: %s is built outside package app", fset.Position(lit.Pos()), name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
