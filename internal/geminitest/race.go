//go:build race

package geminitest

// RaceEnabled reports whether this binary was built with the race detector.
// Suites that build the server for their tests build it the same way, so
// that a test run under -race checks the server's side of the traffic too.
const RaceEnabled = true
