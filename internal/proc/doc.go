// Package proc starts and stops the processes this server runs: each child
// gets a process group of its own, so that stopping a call (interrupt
// first, then kill) reaches every process it made, and its output is read
// into buffers with caps. The backends that run the Gemini CLI use it, and
// Run serves short helper commands (git) that are read whole.
package proc
