//go:build !unix && !windows

package proc

import (
	"os"
	"os/exec"
)

func SetGroup(*exec.Cmd) {}

func InterruptGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}

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

// ExitSignal returns "": these systems report no signals here.
func ExitSignal(*os.ProcessState) string { return "" }
