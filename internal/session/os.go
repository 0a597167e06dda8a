package session

import "runtime"

func isUnixLike() bool {
	return runtime.GOOS != "windows" && runtime.GOOS != "darwin" && runtime.GOOS != "ios" && runtime.GOOS != "plan9"
}
