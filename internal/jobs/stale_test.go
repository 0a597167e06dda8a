package jobs

import (
	"testing"
	"time"
)

// A running job whose runner stopped (Stale) is cancelled at once by its
// caller's cancel, even one asked before: no runner would ever see the
// request, and the job would stay "stopping" until it went stale again.
func TestCancelOfStaleJobEndsIt(t *testing.T) {
	t0 := time.Now()
	for _, asked := range []bool{false, true} {
		j, err := New("tok", "research", 0, t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Start(t0); err != nil {
			t.Fatal(err)
		}
		if asked && !j.RequestCancel(t0) {
			t.Fatal("the first cancel changed nothing")
		}
		later := t0.Add(StaleAfter + time.Second)
		if !j.RequestCancel(later) || j.Status != Cancelled || !j.Updated.Equal(later) {
			t.Fatalf("asked before %v: a stale job's cancel leaves it %s", asked, j.Status)
		}
		if err := j.Check(); err != nil {
			t.Fatal(err)
		}
	}
}
