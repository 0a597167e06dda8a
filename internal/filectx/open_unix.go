//go:build unix

package filectx

import (
	"os"
	"syscall"
)

// openFile opens path to read a file a scan found: not through a
// symbolic link, and without blocking on a FIFO swapped in since.
func openFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
