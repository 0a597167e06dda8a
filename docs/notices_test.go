package docs

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite THIRD_PARTY_NOTICES.md and THIRD_PARTY_LICENSES.txt from the module cache")

const (
	noticesFile  = "THIRD_PARTY_NOTICES.md"
	licencesFile = "THIRD_PARTY_LICENSES.txt"
	updateCmd    = "go test ./docs -run TestThirdPartyNotices -update"
	mainPackage  = "./cmd/gemini-mcp-server"
)

// releasePlatforms are the GOOS/GOARCH pairs the project's binaries are
// built for: the targets of .goreleaser.yaml (TestReleaseConfig checks
// that they agree). A module linked on any of them is distributed.
var releasePlatforms = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

// allowedLicences are the licences compatible with the project's
// Apache-2.0 that a linked module may carry. MPL-2.0 is file-level
// copyleft: linking its files unchanged is fine, changes to them would
// have to be published under it.
var allowedLicences = []string{"Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "MIT", "MPL-2.0"}

// notInBinary lists, per module, licences its licence file names for
// parts of the module that are not code, and so never in the binary.
var notInBinary = map[string]map[string]string{
	"github.com/modelcontextprotocol/go-sdk": {
		"CC-BY-4.0": "its LICENSE puts documentation contributions under CC-BY-4.0; the binary holds none of its documentation",
	},
}

// licenceMarks maps a phrase of a licence text (lower case, every run of
// other characters than letters and digits made one space) to the licence
// it shows. Marks of licences outside the allow-list are here so that a
// module under one of them is named, not missed.
var licenceMarks = []struct{ phrase, id string }{
	{"apache license version 2 0", "Apache-2.0"},
	{"permission is hereby granted free of charge to any person obtaining a copy", "MIT"},
	{"licensed under the mit license", "MIT"},
	{"permission to use copy modify and or distribute this software for any purpose with or without fee is hereby granted", "ISC"},
	{"mozilla public license version 2 0", "MPL-2.0"},
	{"mozilla public license version 1", "MPL-1.x"},
	{"gnu general public license", "GPL"},
	{"gnu lesser general public license", "LGPL"},
	{"gnu library general public license", "LGPL"},
	{"gnu affero general public license", "AGPL"},
	{"server side public license", "SSPL"},
	{"business source license", "BUSL"},
	{"commons clause", "Commons-Clause"},
	{"elastic license", "Elastic"},
	{"cc by 4 0", "CC-BY-4.0"},
	{"creative commons attribution 4 0", "CC-BY-4.0"},
	{"creative commons attribution sharealike", "CC-BY-SA"},
	{"cc by sa", "CC-BY-SA"},
	{"cc by nc", "CC-BY-NC"},
	{"eclipse public license", "EPL"},
	{"common development and distribution license", "CDDL"},
}

var (
	notAlnum = regexp.MustCompile(`[^a-z0-9]+`)
)

// classify returns the licences a licence file's text shows, sorted, or
// none when it shows no licence this test knows.
func classify(text string) []string {
	n := " " + strings.TrimSpace(notAlnum.ReplaceAllString(strings.ToLower(text), " ")) + " "
	var ids []string
	for _, m := range licenceMarks {
		if strings.Contains(n, " "+m.phrase+" ") && !slices.Contains(ids, m.id) {
			ids = append(ids, m.id)
		}
	}
	if strings.Contains(n, " redistribution and use in source and binary forms with or without modification are permitted ") {
		// BSD-3-Clause's third clause, however it names the owners.
		if strings.Contains(n, " may be used to endorse or promote products derived from this software ") {
			ids = append(ids, "BSD-3-Clause")
		} else {
			ids = append(ids, "BSD-2-Clause")
		}
	}
	slices.Sort(ids)
	return ids
}

// licenceFile is one licence, notice or patent file of a module's root.
type licenceFile struct {
	name, text string
}

// linkedModule is a module linked into the binary, as the notices list it.
type linkedModule struct {
	path, version string
	platforms     []string // empty: every release platform
	licences      []string // of its main licence files, in the binary
	files         []licenceFile
}

func (m linkedModule) licence() string { return strings.Join(m.licences, " AND ") }

func (m linkedModule) platformText() string {
	if len(m.platforms) == 0 {
		return "all"
	}
	return strings.Join(m.platforms, ", ")
}

// mainLicence reports whether a file of a module's root is its licence
// (LICENSE, LICENSE.txt, COPYING…), as opposed to a further file such as
// LICENSE-3RD-PARTY.md, NOTICE or PATENTS.
func mainLicence(name string) bool {
	u := strings.ToUpper(name)
	for _, p := range []string{"LICENSE", "LICENCE", "COPYING"} {
		if u == p || u == p+".TXT" || u == p+".MD" {
			return true
		}
	}
	return false
}

func isLicenceFile(name string) bool {
	u := strings.ToUpper(name)
	for _, p := range []string{"LICENSE", "LICENCE", "COPYING", "NOTICE", "PATENTS"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

// readLicenceFiles reads the licence, notice and patent files of a
// module's root directory, sorted by name.
func readLicenceFiles(t *testing.T, dir string) []licenceFile {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []licenceFile
	for _, e := range entries {
		if e.IsDir() || !isLicenceFile(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 1<<20 {
			t.Fatalf("%s: %d bytes, more than a licence file holds", filepath.Join(dir, e.Name()), len(b))
		}
		text := strings.ReplaceAll(string(b), "\r\n", "\n")
		files = append(files, licenceFile{name: e.Name(), text: strings.TrimRight(text, "\n") + "\n"})
	}
	return files
}

// linkedModules lists the modules `go list -deps` finds under the main
// package for each release platform (without building; cgo off, as the
// static release builds), with their licence files from the module cache,
// sorted by path. The Go standard library comes first, as "std".
func linkedModules(t *testing.T) []linkedModule {
	t.Helper()
	mod := goCmd(t, "list", "-m")
	type found struct {
		version, dir string
		platforms    []string
	}
	mods := map[string]*found{}
	for _, p := range releasePlatforms {
		goos, goarch, _ := strings.Cut(p, "/")
		out := goCmdEnv(t, []string{"GOOS=" + goos, "GOARCH=" + goarch, "CGO_ENABLED=0"},
			"list", "-deps", "-f", "{{with .Module}}{{.Path}}\t{{.Version}}\t{{with .Replace}}{{.Dir}}{{else}}{{.Dir}}{{end}}{{end}}", mainPackage)
		for _, line := range strings.Split(out, "\n") {
			f := strings.Split(line, "\t")
			if len(f) != 3 || f[0] == mod {
				continue
			}
			m := mods[f[0]]
			if m == nil {
				m = &found{version: f[1], dir: f[2]}
				mods[f[0]] = m
			}
			if m.version != f[1] {
				t.Fatalf("%s is linked at %s on one platform and %s on %s", f[0], m.version, f[1], p)
			}
			if f[2] == "" {
				t.Fatalf("%s %s is not in the module cache: run go mod download", f[0], f[1])
			}
			if !slices.Contains(m.platforms, p) {
				m.platforms = append(m.platforms, p)
			}
		}
	}
	if len(mods) < 5 {
		t.Fatalf("go list -deps %s found only %d modules: is the template right?", mainPackage, len(mods))
	}
	goroot := goCmd(t, "env", "GOROOT")
	out := []linkedModule{{path: "std", version: "toolchain", files: readLicenceFiles(t, goroot)}}
	paths := make([]string, 0, len(mods))
	for p := range mods {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		m := mods[p]
		lm := linkedModule{path: p, version: m.version, files: readLicenceFiles(t, m.dir)}
		if len(m.platforms) < len(releasePlatforms) {
			lm.platforms = m.platforms
		}
		out = append(out, lm)
	}
	for i := range out {
		m := &out[i]
		for _, f := range m.files {
			if !mainLicence(f.name) {
				continue
			}
			for _, id := range classify(f.text) {
				if _, ok := notInBinary[m.path][id]; !ok && !slices.Contains(m.licences, id) {
					m.licences = append(m.licences, id)
				}
			}
		}
		slices.Sort(m.licences)
		if len(m.licences) == 0 {
			t.Errorf("%s %s: no licence file this test recognises (files: %v): read it and extend the classifier or stop using the module", m.path, m.version, fileNames(m.files))
		}
	}
	return out
}

func fileNames(files []licenceFile) []string {
	var names []string
	for _, f := range files {
		names = append(names, f.name)
	}
	return names
}

// renderNotices returns the text of THIRD_PARTY_NOTICES.md and of
// THIRD_PARTY_LICENSES.txt for the linked modules.
func renderNotices(t *testing.T, mods []linkedModule) (notices, licences string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(`# Third-party notices

gemini-mcp-server is licensed under the Apache License 2.0 ([LICENSE](LICENSE), [NOTICE](NOTICE)).
Its binary links the Go standard library and the modules below, on every release platform
(Linux, macOS and Windows, amd64 and arm64) unless the Platforms column names some. Modules that
only the tests use (such as github.com/mark3labs/mcp-go and k8s.io/api, which the workshop's
module in workshop/ requires) are not linked into the binary, are not distributed, and are not
listed. The row std is the Go standard library and runtime, at the version of the Go toolchain
that builds the binary.

[THIRD_PARTY_LICENSES.txt](THIRD_PARTY_LICENSES.txt) holds the full text of every licence,
notice and patent file named in the last column, each distinct text once. The Licence column is
read from each module's main licence file (LICENSE, LICENSE.txt, COPYING…); further files such as
LICENSE-3RD-PARTY.md cover code a module took from others, and are reproduced there in full.

Both files are generated from the module cache by ` + "`" + updateCmd + "`" + `;
` + "`go test ./docs`" + ` fails when they no longer match the modules the binary links.

| Module | Version | Licence | Platforms | Licence files |
|---|---|---|---|---|
`)
	for _, m := range mods {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", m.path, m.version, m.licence(), m.platformText(), strings.Join(fileNames(m.files), ", "))
	}
	var notes []string
	for _, m := range mods {
		for id, why := range notInBinary[m.path] {
			notes = append(notes, fmt.Sprintf("- %s, %s: %s.\n", m.path, id, why))
		}
	}
	if len(notes) > 0 {
		slices.Sort(notes)
		b.WriteString("\nLicences a module's licence file names that do not apply to the binary:\n\n")
		for _, n := range notes {
			b.WriteString(n)
		}
	}
	b.WriteString("\n## NOTICE files of Apache-2.0 modules\n\n" +
		"The NOTICE files that Apache-2.0 modules ship, reproduced as the Apache License's section 4(d) requires.\n")
	for _, m := range mods {
		if !slices.Contains(m.licences, "Apache-2.0") {
			continue
		}
		for _, f := range m.files {
			if !strings.HasPrefix(strings.ToUpper(f.name), "NOTICE") {
				continue
			}
			for _, line := range strings.Split(f.text, "\n") {
				if fence.MatchString(line) {
					t.Fatalf("%s %s: %s has a line that would end its code block: %q", m.path, m.version, f.name, line)
				}
			}
			fmt.Fprintf(&b, "\n### %s %s (%s)\n\n```text\n%s```\n", m.path, m.version, f.name, f.text)
		}
	}

	var l strings.Builder
	l.WriteString("Licence, notice and patent files of the Go standard library and the modules linked into\n" +
		"gemini-mcp-server, each distinct text once, headed by the modules and files that carry it.\n" +
		"Generated by `" + updateCmd + "`; do not edit.\n")
	type text struct {
		owners []string
		body   string
	}
	var texts []*text
	byHash := map[[32]byte]*text{}
	for _, m := range mods {
		for _, f := range m.files {
			h := sha256.Sum256([]byte(f.text))
			x := byHash[h]
			if x == nil {
				x = &text{body: f.text}
				byHash[h] = x
				texts = append(texts, x)
			}
			x.owners = append(x.owners, fmt.Sprintf("%s %s: %s", m.path, m.version, f.name))
		}
	}
	rule := strings.Repeat("=", 78) + "\n"
	for _, x := range texts {
		l.WriteString("\n" + rule)
		for _, o := range x.owners {
			l.WriteString(o + "\n")
		}
		l.WriteString(rule + "\n" + x.body)
	}
	return b.String(), l.String()
}

// noticeRow is a row of THIRD_PARTY_NOTICES.md's table.
type noticeRow struct {
	line             int
	version, licence string
}

var tableRow = regexp.MustCompile(`^\| ([^ |]+) \| ([^ |]+) \| ([^|]+?) \| [^|]* \| [^|]* \|$`)

func readNoticeRows(t *testing.T, text string) map[string]noticeRow {
	t.Helper()
	rows := map[string]noticeRow{}
	for i, line := range strings.Split(text, "\n") {
		m := tableRow.FindStringSubmatch(line)
		if m == nil || m[1] == "Module" || strings.HasPrefix(m[1], "-") {
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("%s:%d: a second row for %s", noticesFile, i+1, m[1])
		}
		rows[m[1]] = noticeRow{line: i + 1, version: m[2], licence: m[3]}
	}
	return rows
}

// TestThirdPartyNotices checks THIRD_PARTY_NOTICES.md against the modules
// `go list -deps` finds linked into the binary on the release platforms:
// each has a row with its current version and the licence its licence file
// shows, every licence is in the allow-list, no row names a module that is
// no longer linked, and both generated files are what the module cache
// gives now. With -update it rewrites them instead.
func TestThirdPartyNotices(t *testing.T) {
	mods := linkedModules(t)
	notices, licences := renderNotices(t, mods)
	if *update {
		for name, text := range map[string]string{noticesFile: notices, licencesFile: licences} {
			if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %s and %s: %d modules", noticesFile, licencesFile, len(mods))
		return
	}
	b, err := os.ReadFile(filepath.Join(root, noticesFile))
	if err != nil {
		t.Fatalf("%v (write it with %s)", err, updateCmd)
	}
	rows := readNoticeRows(t, string(b))
	linked := map[string]bool{}
	for _, m := range mods {
		linked[m.path] = true
		for _, id := range m.licences {
			if !slices.Contains(allowedLicences, id) {
				t.Errorf("%s %s is under %s, which is not in the allow-list %v: review it before linking the module", m.path, m.version, id, allowedLicences)
			}
		}
		r, ok := rows[m.path]
		switch {
		case !ok:
			t.Errorf("%s %s is linked into the binary but has no row in %s; run %s", m.path, m.version, noticesFile, updateCmd)
		case r.version != m.version:
			t.Errorf("%s:%d: %s is at %s, the binary links %s; run %s", noticesFile, r.line, m.path, r.version, m.version, updateCmd)
		case r.licence != m.licence():
			t.Errorf("%s:%d: %s says %q, its licence file shows %q; run %s", noticesFile, r.line, m.path, r.licence, m.licence(), updateCmd)
		}
	}
	for p, r := range rows {
		if !linked[p] {
			t.Errorf("%s:%d: %s is no longer linked into the binary; run %s", noticesFile, r.line, p, updateCmd)
		}
		for _, id := range strings.Split(r.licence, " AND ") {
			if !slices.Contains(allowedLicences, id) {
				t.Errorf("%s:%d: %s: licence %q is not in the allow-list %v", noticesFile, r.line, p, id, allowedLicences)
			}
		}
	}
	if len(rows) < len(mods)/2 {
		t.Errorf("%s: only %d table rows read for %d linked modules: is the row pattern still right?", noticesFile, len(rows), len(mods))
	}
	if !t.Failed() {
		for name, want := range map[string]string{noticesFile: notices, licencesFile: licences} {
			got, err := os.ReadFile(filepath.Join(root, name))
			if err != nil {
				t.Errorf("%v; run %s", err, updateCmd)
			} else if string(got) != want {
				t.Errorf("%s differs from what the module cache gives (a licence or notice text changed); run %s", name, updateCmd)
			}
		}
	}
}

// TestProjectLicence checks that LICENSE is the Apache License 2.0 the
// notices and the README name, and that the NOTICE it calls for exists.
func TestProjectLicence(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(classify(string(b)), " AND "); got != "Apache-2.0" {
		t.Errorf("LICENSE shows %q, want Apache-2.0", got)
	}
	n, err := os.ReadFile(filepath.Join(root, "NOTICE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(n), noticesFile) {
		t.Errorf("NOTICE does not point to %s", noticesFile)
	}
}

func TestClassify(t *testing.T) {
	mit := "Permission is hereby granted, free of charge, to any person obtaining a copy of this software"
	bsd := "Redistribution and use in source and binary forms, with or without\nmodification, are permitted provided that"
	for text, want := range map[string]string{
		"MIT License\n\n" + mit: "MIT",
		bsd + "\n* Neither the name of Google Inc. nor the names of its contributors may be used to endorse or promote products derived from this software": "BSD-3-Clause",
		bsd + " Neither the names of the authors nor the names of the\ncontributors may be used to endorse or promote products derived from\nthis software": "BSD-3-Clause",
		bsd + " the following conditions are met: 1. 2.": "BSD-2-Clause",
		"Apache License\nVersion 2.0, January 2004\n---\n" + bsd + " Neither the name of X may be used to endorse or promote products derived from this software": "Apache-2.0 BSD-3-Clause",
		"Permission to use, copy, modify, and/or distribute this software for any purpose with or without fee is hereby granted":                                  "ISC",
		"Mozilla Public License Version 2.0":                              "MPL-2.0",
		"GNU GENERAL PUBLIC LICENSE Version 3":                            "GPL",
		"GNU Lesser General Public License":                               "LGPL",
		"Some contributions remain licensed under the MIT License.":       "MIT",
		"All rights reserved. You may not copy this.":                     "",
		"Documentation contributions are licensed under CC-BY-4.0.":       "CC-BY-4.0",
		"Copyright (c) 2016 Uber Technologies, Inc.\n\n" + mit + " Other": "MIT",
	} {
		if got := strings.Join(classify(text), " "); got != want {
			t.Errorf("classify(%.40q…) = %q, want %q", text, got, want)
		}
	}
}

// goCmdEnv is goCmd with variables added to the environment.
func goCmdEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s go %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
