//go:build race

package manifesttest

// race is whether the race detector is on: filling a manifest to
// manifest.MaxFiles takes ten times as long with it, and checks no
// concurrency (Concurrent does).
const race = true
