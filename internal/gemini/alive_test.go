package gemini

import (
	"os"
	"strconv"
	"strings"
)

// alive reports whether pid is a running (not zombie) process, on Linux;
// elsewhere it says false.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
