//go:build unix

package mcphost

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an advisory lock on path (shared, or exclusive for a
// writer, which creates the file) and returns its release.
func lockFile(path string, exclusive bool) (func(), error) {
	flag, how := os.O_RDONLY, unix.LOCK_SH
	if exclusive {
		flag, how = os.O_RDWR|os.O_CREATE, unix.LOCK_EX
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
