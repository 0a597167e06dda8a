package geminitest

import (
	"os"
	"strconv"
	"strings"
)

// Alive reports whether pid is a running process; a zombie (ended, not yet
// reaped by its parent) does not count. On Linux it reads /proc/PID/stat;
// elsewhere it asks the system whether the process exists (on other Unix
// systems a zombie then counts as running, see proc_unix.go).
func Alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
