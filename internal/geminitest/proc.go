package geminitest

import (
	"os"
	"strconv"
	"strings"
)

// Alive reports whether pid is a running process; a zombie (ended, not yet
// reaped by its parent) does not count. It reads /proc, so it can tell only
// on Linux; elsewhere it reports false, and tests that rely on it should run
// on Linux only.
func Alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
