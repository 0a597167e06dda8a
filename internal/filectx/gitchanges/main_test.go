package gitchanges

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no run leaves a goroutine behind (the copies of a
// git process's output).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
