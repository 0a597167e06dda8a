package proc

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no run leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
