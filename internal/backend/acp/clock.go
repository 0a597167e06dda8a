package acp

import "time"

// clock is the pool's time: every time it reads (a process's idle time, a
// spare's age, the pause after a failed start) and the ticks its watches
// wait for come from one clock, the system's in the server and a hand-moved
// one in tests. The bounds on another process's answer (a start's 60 s, a
// spare's session/new, the kill grace) are not the pool's time: they run on
// the system's, as the process does.
type clock interface {
	Now() time.Time
	// NewTicker sends the time on ticks every d until stop is called.
	NewTicker(d time.Duration) (ticks <-chan time.Time, stop func())
}

// systemClock is the system's time.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
