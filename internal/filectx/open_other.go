//go:build !unix

package filectx

import "os"

// openFile opens path to read a file a scan found; readCapped checks it
// is the same regular file.
func openFile(path string) (*os.File, error) {
	return os.Open(path)
}
