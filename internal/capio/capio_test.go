package capio

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

var errLong = errors.New("too long")

func TestReadCloser(t *testing.T) {
	over := func() error { return errLong }
	for _, tc := range []struct {
		body string
		max  int64
		want string
		err  error
	}{
		{"", 4, "", nil},
		{"abc", 4, "abc", nil},
		{"abcd", 4, "abcd", nil},
		{"abcde", 4, "abcd", errLong},
		{strings.Repeat("x", 1<<20), 10, "xxxxxxxxxx", errLong},
	} {
		for _, one := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.body)
			if one {
				// A body handed out a byte at a time, with empty reads.
				r = iotest.OneByteReader(r)
			}
			got, err := io.ReadAll(NewReadCloser(io.NopCloser(r), tc.max, over))
			if string(got) != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("%d bytes, cap %d (one byte at a time %v): read %d bytes, %v; want %d, %v",
					len(tc.body), tc.max, one, len(got), err, len(tc.want), tc.err)
			}
		}
	}
}

// TestReadCloserStopsReading: past the cap and the byte that shows a
// longer body, nothing more is read from the peer.
func TestReadCloserStopsReading(t *testing.T) {
	src := &counting{r: strings.NewReader(strings.Repeat("y", 1000))}
	c := NewReadCloser(io.NopCloser(src), 100, func() error { return errLong })
	if _, err := io.ReadAll(c); !errors.Is(err, errLong) {
		t.Fatal(err)
	}
	if src.n != 101 {
		t.Errorf("read %d bytes of the body, want 101", src.n)
	}
}

type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
