//go:build !unix

package mcphost

import "os"

// lockFile only checks that the lock file can be opened: without flock,
// the in-process mutex is the only lock (one process per token file).
func lockFile(path string, exclusive bool) (func(), error) {
	flag := os.O_RDONLY
	if exclusive {
		flag = os.O_RDWR | os.O_CREATE
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}
