// Package buildinfo is the one source of the server's version, the commit
// it was built from and that commit's date: what --version prints, what
// the server and the MCP host send as their version in initialize, what
// doctor and /healthz show.
//
// A release build stamps them with -ldflags -X (.goreleaser.yaml does):
//
//	-X github.com/gemini-mcp-server/gemini-mcp-server/internal/buildinfo.version=v1.2.3
//	-X github.com/gemini-mcp-server/gemini-mcp-server/internal/buildinfo.commit=<sha>
//	-X github.com/gemini-mcp-server/gemini-mcp-server/internal/buildinfo.date=<RFC 3339>
//
// What is not stamped comes from what Go recorded in the binary: the
// module version (the tag for `go install …@vX.Y.Z`), and in a build
// from a git checkout the revision and its time (vcs.revision, vcs.time).
// What neither gives is Unknown.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Unknown stands for a commit or date the build did not record.
const Unknown = "unknown"

// The names -ldflags -X sets: -X VersionVar=v1.2.3.
const (
	pkgPath    = "github.com/gemini-mcp-server/gemini-mcp-server/internal/buildinfo"
	VersionVar = pkgPath + ".version"
	CommitVar  = pkgPath + ".commit"
	DateVar    = pkgPath + ".date"
)

// Stamped at build time with -ldflags -X; empty otherwise.
var (
	version string
	commit  string
	date    string
)

// Info is what a binary knows of its build.
type Info struct {
	// Version is vX.Y.Z (or a pre-release, a Go pseudo-version, or
	// devel+<revision> for a local build without a module version).
	Version string
	// Commit is the full revision, or Unknown.
	Commit string
	// Date is the commit's date in RFC 3339 (UTC), or Unknown.
	Date string
}

// Get returns this binary's build information.
func Get() Info {
	return fill(Info{Version: version, Commit: commit, Date: date}, debug.ReadBuildInfo)
}

// String is the line --version prints after the program's name.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s)", i.Version, i.Commit, i.Date)
}

// fill completes the stamped values in from what read returns.
func fill(in Info, read func() (*debug.BuildInfo, bool)) Info {
	out := in
	bi, ok := read()
	settings := map[string]string{}
	if ok {
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	rev, dirty := settings["vcs.revision"], settings["vcs.modified"] == "true"
	if out.Version == "" {
		switch {
		case ok && bi.Main.Version != "" && bi.Main.Version != "(devel)":
			out.Version = bi.Main.Version
		case rev != "":
			short := rev
			if len(short) > 12 {
				short = short[:12]
			}
			if dirty {
				short += "-dirty"
			}
			out.Version = "devel+" + short
		default:
			out.Version = "devel"
		}
	}
	if out.Commit == "" {
		out.Commit = rev
		if out.Commit == "" {
			out.Commit = Unknown
		}
	}
	if out.Date == "" {
		out.Date = settings["vcs.time"]
		if out.Date == "" {
			out.Date = Unknown
		}
	}
	return out
}
