//go:build unix

package gitchanges

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// ownerOf returns the user id that owns path (not following a final
// symbolic link, as git looks at it).
func ownerOf(path string) (int, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return 0, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("the owner of %s cannot be read", path)
	}
	return int(sys.Uid), nil
}

// ownedHere says whether path is owned by the user this server runs as,
// the test git makes before it trusts a repository (safe.directory): as
// root, a path root owns, or one owned by the user sudo ran the server
// for (SUDO_UID). It also returns the owner, for the message.
func ownedHere(path string) (bool, int, error) {
	uid, err := ownerOf(path)
	if err != nil {
		return false, 0, err
	}
	me := os.Geteuid()
	if me == 0 {
		if uid == 0 {
			return true, uid, nil
		}
		if s, ok := os.LookupEnv("SUDO_UID"); ok {
			if n, err := strconv.Atoi(s); err == nil && n >= 0 {
				me = n
			}
		}
	}
	return uid == me, uid, nil
}

// ownerName names the user id uid in a message.
func ownerName(uid int) string { return "user id " + strconv.Itoa(uid) }

// serverUser names the user this server runs as.
func serverUser() string { return "user id " + strconv.Itoa(os.Geteuid()) }
