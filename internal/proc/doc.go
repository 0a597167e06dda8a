// Package proc starts and stops every process this server runs; no other
// package imports os/exec. Each child gets a process group of its own, so
// that stopping it (interrupt first, then kill) reaches every process it
// made, and whatever of the group outlives the child is killed when it is
// reaped. Run runs a command to its end and reads its output into buffers
// with caps: the one-shot Gemini CLI, git. Start starts a long-lived child
// talked to over pipes: the warm Gemini CLI, the MCP host's stdio servers.
// LookPath finds a program as Start and Run would.
package proc
