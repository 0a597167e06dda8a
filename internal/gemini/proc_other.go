//go:build !unix && !windows

package gemini

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

func interruptGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}

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

// exitSignal returns "": these systems report no signals here.
func exitSignal(*os.ProcessState) string { return "" }
