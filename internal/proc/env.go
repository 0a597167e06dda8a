package proc

import (
	"runtime"
	"strings"
)

// SetEnv returns env with key set to value, replacing any earlier entry.
func SetEnv(env []string, key, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && (k == key || (runtime.GOOS == "windows" && strings.EqualFold(k, key))) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, key+"="+value)
}

// LastBytes returns the last n bytes of s (a tail of a process's output),
// starting at a character boundary.
func LastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for i := 0; i < len(s) && i < 4; i++ {
		if s[i]&0xC0 != 0x80 {
			return s[i:]
		}
	}
	return s
}
