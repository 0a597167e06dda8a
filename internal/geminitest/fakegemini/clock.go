package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// clockOffset is the fixed part of the clock's shift, from geminitest.EnvNowOffset; setupClock
// sets it once at start-up.
var clockOffset time.Duration

// badOffsetFile makes the fake complain only once about an unreadable offset file.
var badOffsetFile sync.Once

// setupClock reads geminitest.EnvNowOffset.
func setupClock() error {
	v := os.Getenv(geminitest.EnvNowOffset)
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return failf(1, "fake-gemini: %s=%q is not a Go duration", geminitest.EnvNowOffset, v)
	}
	clockOffset = d
	return nil
}

// now is the fake's clock: the real time shifted by geminitest.EnvNowOffset and by the duration
// in the file that geminitest.EnvNowOffsetFile names, read afresh on every call.
func now() time.Time {
	return time.Now().Add(clockOffset + fileOffset())
}

// fileOffset returns the duration in the offset file, or 0 when there is no such file. A file
// that does not hold a duration counts as 0, with one complaint on stderr.
func fileOffset() time.Duration {
	path := os.Getenv(geminitest.EnvNowOffsetFile)
	if path == "" {
		return 0
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		badOffsetFile.Do(func() {
			fmt.Fprintf(os.Stderr, "fake-gemini: %s holds %q, not a Go duration; ignoring it\n", path, v)
		})
		return 0
	}
	return d
}

// sameMinute reports whether a and b fall into the same clock minute.
func sameMinute(a, b time.Time) bool {
	return a.Truncate(time.Minute).Equal(b.Truncate(time.Minute))
}
