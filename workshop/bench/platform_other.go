//go:build !linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
)

// The bench reads memory from /proc and sweeps process groups, so it runs
// on Linux only. These stubs keep the package compiling elsewhere (the test
// script vets every package for macOS and Windows too).

var errNotLinux = errors.New("the bench needs Linux (/proc)")

func ownGroup(*exec.Cmd) {}

func killGroup(int) {}

func terminate(p *os.Process) error { return p.Kill() }

type memInfo struct{ rss, hwm, anon, file float64 }

func readMem(int) (memInfo, error) { return memInfo{}, errNotLinux }

func peakRSS(*os.ProcessState) float64 { return 0 }

func machine() (string, float64) { return "", 0 }

func kernel() string { return runtime.GOOS }

func loadAvg() string { return "?" }

type cpuTimes struct{ self, children float64 }

func readCPU(int) (cpuTimes, error) { return cpuTimes{}, errNotLinux }

func (c cpuTimes) minus(o cpuTimes) cpuTimes {
	return cpuTimes{self: c.self - o.self, children: c.children - o.children}
}

func descendantsRSS(int) float64 { return 0 }

func ownCPU(int) (float64, float64, error) { return 0, 0, errNotLinux }
