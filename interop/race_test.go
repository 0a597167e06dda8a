//go:build race

package interop

// raceEnabled reports whether the tests run under the race detector; the
// server binary is then built with -race too.
const raceEnabled = true
