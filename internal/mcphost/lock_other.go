//go:build !unix

package mcphost

import (
	"context"
	"os"
)

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

// waitLockFile only checks that the lock file can be opened: without
// flock, the process's own flight is the only lock.
func waitLockFile(_ context.Context, path string) (func(), error) {
	return lockFile(path, true)
}
