//go:build !unix

package proc

import "os"

// InterruptGroup ends the child. Off Unix there is no signal a console-less
// child could handle, so this is a kill.
func InterruptGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}

// KillGroup ends the child. Descendants the CLI started are not reached;
// with GEMINI_CLI_NO_RELAUNCH=true the CLI starts none.
func KillGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	err := p.Kill()
	if err == os.ErrProcessDone {
		return nil
	}
	return err
}

// ExitSignal returns "": off Unix a killed process has an exit code, not a
// signal.
func ExitSignal(*os.ProcessState) string { return "" }
