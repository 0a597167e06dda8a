package gitchanges

import (
	"context"
	"strings"
)

// nulList splits git's -z output; when it was cut (overflow), the last,
// partial entry is dropped.
func nulList(out []byte, overflow bool) []string {
	s := string(out)
	if overflow {
		if i := strings.LastIndexByte(s, 0); i >= 0 {
			s = s[:i+1]
		} else {
			s = ""
		}
	}
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}

var statusNames = map[byte]string{'A': "added", 'M': "modified", 'D': "deleted", 'R': "renamed", 'C': "copied", 'T': "type-changed", 'U': "unmerged"}

// files adds the staged (or unstaged) changes to c with --name-status,
// marking binaries with --numstat, which shows "-" for their line
// counts, and returns how many there are.
func (r *runner) files(ctx context.Context, staged bool, c *Changes) (int, error) {
	base := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "-z"}
	if staged {
		base = append(base, "--cached", "-M")
	}
	ns, cut, err := r.run(ctx, append(append([]string{}, base...), "--name-status")...)
	if err != nil {
		return 0, err
	}
	num, cutNum, err := r.run(ctx, append(append([]string{}, base...), "--numstat")...)
	if err != nil {
		return 0, err
	}
	if cut || cutNum {
		c.Truncated = true
	}
	binary := binaryPaths(nulList(num, cutNum))
	n := 0
	fields := nulList(ns, cut)
	for i := 0; i < len(fields); i++ {
		st := fields[i]
		if st == "" {
			continue
		}
		f := File{Status: statusNames[st[0]], Staged: staged}
		if f.Status == "" {
			f.Status = st
		}
		if (st[0] == 'R' || st[0] == 'C') && i+2 < len(fields) {
			f.From, f.Path = fields[i+1], fields[i+2]
			i += 2
		} else if i+1 < len(fields) {
			f.Path = fields[i+1]
			i++
		}
		f.Binary = binary[f.Path]
		c.add(f)
		n++
	}
	return n, nil
}

// binaryPaths reads "--numstat -z" output: "added\tdeleted\tpath\0", or
// "added\tdeleted\t\0from\0to\0" for a rename; binaries count "-".
func binaryPaths(fields []string) map[string]bool {
	m := map[string]bool{}
	for i := 0; i < len(fields); i++ {
		parts := strings.SplitN(fields[i], "\t", 3)
		if len(parts) != 3 {
			continue
		}
		path := parts[2]
		if path == "" && i+2 < len(fields) {
			path = fields[i+2]
			i += 2
		}
		if parts[0] == "-" && parts[1] == "-" {
			m[path] = true
		}
	}
	return m
}

// untracked lists the new files git does not track and .gitignore does
// not exclude.
func (r *runner) untracked(ctx context.Context, c *Changes) ([]string, error) {
	out, cut, err := r.run(ctx, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	if cut {
		c.Truncated = true
	}
	var paths []string
	for _, p := range nulList(out, cut) {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}
