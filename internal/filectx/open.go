package filectx

import (
	"fmt"
	"os"
)

// OpenRegular opens path to read it only when it is a regular file: not
// through a symbolic link (on unix), and without blocking on a FIFO or a
// device, which are closed and refused.
func OpenRegular(path string) (*os.File, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s: %s, not a regular file", path, modeName(info.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
