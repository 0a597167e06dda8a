package main

import (
	"path/filepath"
	"testing"
)

// TestModuleRootFromEitherModule: the bench finds its files (bench/peers,
// bench/noopserver, e2e/npm) in the workshop's module whether it runs from
// there (go test, cd workshop && go run ./bench) or from the repository's
// root (go run ./workshop/bench, through go.work).
func TestModuleRootFromEitherModule(t *testing.T) {
	want, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{".", "../.."} {
		t.Run(dir, func(t *testing.T) {
			t.Chdir(dir)
			got, err := moduleRoot(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("moduleRoot from %s = %s, want the workshop's %s", dir, got, want)
			}
		})
	}
}
