package embedded

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// The tests here run the test binary again as a helper process (the
// TestMain of this package dispatches on helperEnv), so that two real
// processes share one database file, and one of them can be killed with
// SIGKILL in the middle of its writes.

const (
	helperEnv = "GEMINI_MCP_STORE_HELPER" // the helper's mode
	helperDB  = "GEMINI_MCP_STORE_DB"     // the database file
	helperArg = "GEMINI_MCP_STORE_ARG"    // the mode's argument
	// helperLeaseTTL is the lease TTL of the helpers and of the test's
	// store in TestLeaseAcrossProcesses.
	helperLeaseTTL = 1500 * time.Millisecond
	// helperLife bounds a helper that nobody stops: a guard against a
	// leaked process if the test dies.
	helperLife = 2 * time.Minute
)

// helperMain is the helper process: it opens the store and acts on it as
// its mode says, reporting on stdout.
func helperMain() int {
	time.AfterFunc(helperLife, func() { os.Exit(3) })
	s, err := Open(os.Getenv(helperDB), session.Options{LeaseTTL: helperLeaseTTL})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	arg := os.Getenv(helperArg)
	switch os.Getenv(helperEnv) {
	case "write":
		// Touch idA and append to idB, n times each; "tag:i" names a turn.
		tag, nstr, _ := strings.Cut(arg, ":")
		n, _ := strconv.Atoi(nstr)
		for i := range n {
			if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/" + tag}, time.Now()); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if err := s.AppendTurn(ctx, idB, json.RawMessage(fmt.Sprintf(`{"tag":%q,"i":%d}`, tag, i))); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		s.Close()
		return 0
	case "hold":
		if _, err := s.Lease(ctx, arg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("held")
		select {} // until killed
	case "append":
		// Append turns for ever, printing each acknowledged one.
		for i := 1; ; i++ {
			if err := s.AppendTurn(ctx, arg, turnOf(i)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Println(i)
		}
	}
	return 2
}

// turnOf is the i-th turn the append helper writes: big enough that a
// write spans several pages of the database.
func turnOf(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"i":%d,"text":%q}`, i, strings.Repeat(fmt.Sprintf("turn %d ", i), 1000)))
}

const (
	idA = "0b1c2d3e-4f50-4a6b-8c7d-8e9fa0b1c2d3"
	idB = "1c2d3e4f-5061-4b7c-9d8e-9fa0b1c2d3e4"
)

// helper starts the helper process in mode on the database file db.
func helper(t *testing.T, db, mode, arg string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDB+"="+db, helperArg+"="+arg)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		io.Copy(io.Discard, out)
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("helper %s stderr:\n%s", mode, stderr.String())
		}
	})
	return cmd, bufio.NewScanner(out)
}

// TestTwoProcessesWrite has two processes and this one touch one session
// and append to another at the same time: every write counts.
func TestTwoProcessesWrite(t *testing.T) {
	db := t.TempDir() + "/sessions.db"
	// The three processes also race to create the database.
	const n = 150
	a, _ := helper(t, db, "write", "a:"+strconv.Itoa(n))
	b, _ := helper(t, db, "write", "b:"+strconv.Itoa(n))
	s, err := Open(db, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range n {
		if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/t"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendTurn(ctx, idB, json.RawMessage(fmt.Sprintf(`{"tag":"t","i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range []*exec.Cmd{a, b} {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	r, ok, err := s.Get(ctx, idA)
	if !ok || err != nil || r.Turns != 3*n {
		t.Fatalf("three processes touched %d times each: %d turns counted (ok %v, err %v)", n, r.Turns, ok, err)
	}
	turns, _, err := s.LoadTurns(ctx, idB)
	if err != nil || len(turns) != 3*n {
		t.Fatalf("three processes appended %d turns each: %d recorded, %v", n, len(turns), err)
	}
	next := map[string]int{}
	for _, turn := range turns {
		var v struct {
			Tag string
			I   int
		}
		if err := json.Unmarshal(turn, &v); err != nil {
			t.Fatal(err)
		}
		if v.I != next[v.Tag] {
			t.Fatalf("process %s's turn %d follows its turn %d", v.Tag, v.I, next[v.Tag]-1)
		}
		next[v.Tag]++
	}
}

// TestLeaseAcrossProcesses: a lease another process holds makes this one
// wait, for longer than the lease's TTL while its holder renews it, and
// passes to this process once the holder is killed and the TTL is over.
func TestLeaseAcrossProcesses(t *testing.T) {
	db := t.TempDir() + "/sessions.db"
	s, err := Open(db, session.Options{LeaseTTL: helperLeaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	holder, out := helper(t, db, "hold", idA)
	if !out.Scan() || out.Text() != "held" {
		t.Fatalf("the helper did not take the lease: %q %v", out.Text(), out.Err())
	}
	held := time.Now()

	var killed atomic.Bool
	var killedAt atomic.Int64
	done := make(chan error, 1)
	go func() {
		release, err := s.Lease(context.Background(), idA)
		if err != nil {
			done <- err
			return
		}
		defer release()
		if !killed.Load() {
			done <- fmt.Errorf("took the lease %v after another process took it, while it was alive", time.Since(held))
			return
		}
		// The dead holder's lease lasts until its TTL from its last
		// renewal, which came at most now.
		if since := time.Since(time.Unix(0, killedAt.Load())); since > helperLeaseTTL+30*time.Second {
			done <- fmt.Errorf("took the dead holder's lease only %v after the kill", since)
			return
		}
		done <- nil
	}()
	// The holder keeps its lease for two TTLs by renewing it.
	tick := time.NewTicker(helperLeaseTTL / 4)
	defer tick.Stop()
	for time.Since(held) < 2*helperLeaseTTL {
		select {
		case err := <-done:
			t.Fatalf("while the holder lived: %v", err)
		case <-tick.C:
		}
	}
	killed.Store(true)
	killedAt.Store(time.Now().UnixNano())
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the lease of a killed holder never passed on")
	}
}

// TestKillDuringWrites kills a process appending turns, at a moment it is
// writing, and checks that every turn it acknowledged is there, whole,
// and that the database is sound.
func TestKillDuringWrites(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			db := t.TempDir() + "/sessions.db"
			cmd, out := helper(t, db, "append", idA)
			acked := 0
			// Kill after a number of acks that varies by round, so that the
			// kill lands at different points of a write.
			for acked < 40+round*37 {
				if !out.Scan() {
					t.Fatalf("the helper stopped after %d turns: %v", acked, out.Err())
				}
				acked, _ = strconv.Atoi(out.Text())
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			// Acks printed before the kill count too.
			for out.Scan() {
				// A line the kill cut short reads as a smaller number.
				if n, err := strconv.Atoi(out.Text()); err == nil && n > acked {
					acked = n
				}
			}
			cmd.Wait()

			s, err := Open(db, session.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var check string
			if err := s.db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
				t.Fatalf("integrity_check after kill -9: %q %v", check, err)
			}
			turns, _, err := s.LoadTurns(context.Background(), idA)
			if err != nil {
				t.Fatal(err)
			}
			if len(turns) < acked || len(turns) > acked+1 {
				t.Fatalf("%d turns acknowledged before kill -9, %d recorded", acked, len(turns))
			}
			for i, turn := range turns {
				if string(turn) != compactString(t, turnOf(i+1)) {
					t.Fatalf("turn %d is not what was written: %.100s", i+1, turn)
				}
			}
		})
	}
}

func compactString(t *testing.T, turn json.RawMessage) string {
	t.Helper()
	s, err := compactTurn(turn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
