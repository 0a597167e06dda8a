package gitchanges

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// How no program the repository names runs. Git reads its configuration
// from the system, the user (global), the repository (.git/config,
// config.worktree, and what their include.path and includeIf bring in),
// the environment and the command line; the last two win, and the
// repository's own cannot be switched off. So:
//
//   - The environment is built, not inherited: only PATH, HOME,
//     XDG_CONFIG_HOME and the temporary and Windows system directories
//     pass, so no GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE,
//     GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_SSH_COMMAND, GIT_ASKPASS or
//     GIT_CONFIG_* reaches git from the server's environment.
//   - The system and global configuration are empty (GIT_CONFIG_NOSYSTEM,
//     GIT_CONFIG_SYSTEM and GIT_CONFIG_GLOBAL set to the null device), as
//     are the system attributes (GIT_ATTR_NOSYSTEM).
//   - Fetching is off: GIT_ALLOW_PROTOCOL is set to an empty list, which
//     overrides every protocol.*.allow, so the lazy fetch of a partial
//     clone's missing object fails without starting a transport, an
//     ssh (core.sshCommand), a proxy (core.gitProxy), an upload-pack
//     (remote.*.uploadpack), a remote helper (ext::), a credential helper
//     or an askPass program.
//   - Clean and process filters (filter.<name>.clean/process), which git
//     runs to read a work-tree file the index's timestamps do not vouch
//     for, are blanked: the repository's configuration is listed first
//     (includes followed) and every filter it defines is overridden with
//     an empty command and required=false, through GIT_CONFIG_COUNT
//     (which takes any name, unlike -c). A filter defined between that
//     listing and the diff that follows it would escape; the window is
//     one process start.
//   - core.fsmonitor is false and core.hooksPath the null device; the
//     diffs run with --no-ext-diff (diff.external, diff.<driver>.command),
//     --no-textconv (diff.<driver>.textconv), --no-pager, and
//     --ignore-submodules=dirty, so that git does not start a git in a
//     submodule's work tree, which would run that submodule's own
//     filters and fsmonitor.
//
// None of the commands run (diff, ls-files, config) signs, edits, merges
// or writes the index, so gpg.program, core.editor, merge drivers and
// hooks are not reached; TestNoProgramTheRepositoryNamesRuns shows each
// mechanism above live in plain git and dead here.

// keepEnv are the only variables of the server's environment git gets.
var keepEnv = []string{"PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR", "TMP", "TEMP", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "USERPROFILE", "COMSPEC", "PATHEXT"}

// maxFilters caps the filter drivers a repository may define.
const maxFilters = 1000

// gitEnv is the environment of every git command: loc's parts told to
// git explicitly, work tree top, and the configuration that turns off
// what runs programs, with the filters named blanked.
func gitEnv(loc *location, top string, filters []string) []string {
	var env []string
	for _, k := range keepEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_SYSTEM="+os.DevNull,
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ALLOW_PROTOCOL=",
		"GIT_PROTOCOL_FROM_USER=0",
		"GIT_DIR="+loc.gitDir,
		"GIT_COMMON_DIR="+loc.commonDir,
		"GIT_WORK_TREE="+top,
		"GIT_INDEX_FILE="+loc.index,
		"GIT_OBJECT_DIRECTORY="+loc.objects,
	)
	cfg := [][2]string{
		{"core.fsmonitor", "false"},
		{"core.hooksPath", os.DevNull},
		{"core.quotepath", "false"},
		{"diff.noprefix", "false"},
	}
	for _, f := range filters {
		for _, k := range []string{"clean", "smudge", "process"} {
			cfg = append(cfg, [2]string{"filter." + f + "." + k, ""})
		}
		cfg = append(cfg, [2]string{"filter." + f + ".required", "false"})
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(cfg)))
	for i, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

// repoConfig is what the repository's configuration says that matters
// here.
type repoConfig struct {
	worktree string   // core.worktree, as written
	filters  []string // the filter drivers defined
}

// config lists the repository's configuration (with its includes) and
// picks core.worktree and the filter drivers out of it.
func (r *runner) config(ctx context.Context) (*repoConfig, error) {
	out, overflow, err := r.run(ctx, "config", "--includes", "--list", "-z")
	if err != nil {
		return nil, err
	}
	if overflow {
		return nil, &Error{Kind: KindFailed, Message: fmt.Sprintf("the git configuration of %s is larger than %d bytes: it is not read", r.dir, r.opts.MaxBytes+1<<20)}
	}
	cfg := &repoConfig{}
	seen := map[string]bool{}
	for _, entry := range strings.Split(string(out), "\x00") {
		key, value, _ := strings.Cut(entry, "\n")
		// Section and key come lower-cased; a subsection keeps its case.
		if key == "core.worktree" {
			cfg.worktree = value
			continue
		}
		rest, ok := strings.CutPrefix(key, "filter.")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 {
			continue
		}
		name := rest[:i]
		if !seen[name] {
			if len(cfg.filters) >= maxFilters {
				return nil, &Error{Kind: KindFailed, Message: fmt.Sprintf("the git configuration of %s defines more than %d filter drivers: it is not read", r.dir, maxFilters)}
			}
			seen[name] = true
			cfg.filters = append(cfg.filters, name)
		}
	}
	return cfg, nil
}
