// Package capio holds readers that stop at a cap, for bodies that come
// from peers this server does not trust (the Gemini API, downstream MCP
// servers).
package capio

import "io"

// ReadCloser reads at most a fixed number of bytes of a body. Once they
// are read, a body that holds one byte more fails with the error its
// over function returns, and a body that ends there ends as usual; the
// rest of a longer body is never read.
type ReadCloser struct {
	rc   io.ReadCloser
	left int64
	over func() error
}

// NewReadCloser caps rc at max bytes; over makes the error for a longer
// body (and may record that it came).
func NewReadCloser(rc io.ReadCloser, max int64, over func() error) *ReadCloser {
	return &ReadCloser{rc: rc, left: max, over: over}
}

func (c *ReadCloser) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.left <= 0 {
		// One byte more tells a body of exactly the cap from a longer one.
		var one [1]byte
		for {
			n, err := c.rc.Read(one[:])
			if n > 0 {
				return 0, c.over()
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	return n, err
}

// Close closes the body.
func (c *ReadCloser) Close() error { return c.rc.Close() }
