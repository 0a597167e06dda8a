//go:build !unix

package proc

import "os"

// interruptGroup ends the child. Off Unix there is no signal a console-less
// child could handle, so this is a kill.
func interruptGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}

// killGroup ends the child. Descendants the CLI started are not reached;
// with GEMINI_CLI_NO_RELAUNCH=true the CLI starts none.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	err := p.Kill()
	if err == os.ErrProcessDone {
		return nil
	}
	return err
}

// exitSignal returns "": off Unix a killed process has an exit code, not a
// signal.
func exitSignal(*os.ProcessState) string { return "" }
