package buildinfo

import (
	"reflect"
	"runtime/debug"
	"testing"
)

func TestFill(t *testing.T) {
	vcs := func(main string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Version: main}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, c := range []struct {
		name    string
		stamped Info
		read    func() (*debug.BuildInfo, bool)
		want    Info
	}{
		{"all stamped", Info{"v1.2.3", "abc", "2026-01-02T03:04:05Z"}, vcs("v9.9.9", "vcs.revision", rev, "vcs.time", "2020-01-01T00:00:00Z"),
			Info{"v1.2.3", "abc", "2026-01-02T03:04:05Z"}},
		{"version stamped, the rest from git", Info{Version: "v1.2.3"}, vcs("(devel)", "vcs.revision", rev, "vcs.time", "2026-01-02T03:04:05Z"),
			Info{"v1.2.3", rev, "2026-01-02T03:04:05Z"}},
		{"go install of a tag", Info{}, vcs("v1.4.0"), Info{"v1.4.0", Unknown, Unknown}},
		{"checkout, modified", Info{}, vcs("(devel)", "vcs.revision", rev, "vcs.modified", "true", "vcs.time", "2026-01-02T03:04:05Z"),
			Info{"devel+0123456789ab-dirty", rev, "2026-01-02T03:04:05Z"}},
		{"no build information", Info{}, none, Info{"devel", Unknown, Unknown}},
	} {
		if got := fill(c.stamped, c.read); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	if got, want := (Info{"v1.2.3", "abc", "2026-01-02T03:04:05Z"}).String(), "v1.2.3 (commit abc, built 2026-01-02T03:04:05Z)"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
}

// TestVarsNameThisPackage: the names -ldflags -X takes are this
// package's variables (a moved package would stamp nothing, silently).
func TestVarsNameThisPackage(t *testing.T) {
	type probe struct{}
	if got := reflect.TypeFor[probe]().PkgPath(); got != pkgPath {
		t.Fatalf("pkgPath is %q, the package is %q", pkgPath, got)
	}
}
