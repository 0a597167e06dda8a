package redisstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Environment of the helper process that takes a lease and is killed.
const (
	envHelperURL = "GEMINI_MCP_REDISSTORE_HELPER_URL"
	envHelperID  = "GEMINI_MCP_REDISSTORE_HELPER_ID"
	envHelperTTL = "GEMINI_MCP_REDISSTORE_HELPER_LEASE_TTL"
)

// leaseHolder is the helper process: it takes a session's lease, says so
// on stdout, and holds it until killed.
func leaseHolder() {
	ttl, err := time.ParseDuration(os.Getenv(envHelperTTL))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv(envHelperURL), session.Options{LeaseTTL: ttl})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := s.Lease(ctx, os.Getenv(envHelperID)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("held")
	// Hold until killed: stdin is a pipe the parent never writes.
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(3)
}

// TestLeaseRenewedAndHandedOver holds a lease far longer than its TTL
// (seen through its renewals) while a waiter in the same process waits,
// then releases it: the waiter takes it.
func TestLeaseRenewedAndHandedOver(t *testing.T) {
	srv := redistest.Start(t)
	const leaseTTL = 600 * time.Millisecond
	s := open(t, srv, session.Options{LeaseTTL: leaseTTL})
	ctx := t.Context()
	c := plain(t, srv)
	id := session.NewUUID()
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		rel, err := s.Lease(ctx, id)
		if err == nil {
			defer rel()
		}
		got <- err
	}()
	// Wait for four renewals (PTTL going up again): without renewal the
	// lease would have expired before the fourth.
	last := c.PTTL(ctx, s.leaseKey(id)).Val()
	for renewals := 0; renewals < 4; {
		d := c.PTTL(ctx, s.leaseKey(id)).Val()
		if d <= 0 {
			t.Fatalf("the held lease expired (PTTL %v) after %d renewals", d, renewals)
		}
		if d > last {
			renewals++
		}
		last = d
		select {
		case err := <-got:
			t.Fatalf("the waiter got the held lease: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if d := c.PTTL(ctx, s.leaseKey(id)).Val(); d > leaseTTL {
		t.Errorf("lease PTTL %v > lease TTL %v", d, leaseTTL)
	}
	release()
	release() // a second release does nothing
	if err := <-got; err != nil {
		t.Fatalf("the waiter after release: %v", err)
	}
}

// TestLeaseOfKilledHolder takes a lease in another process, kills it with
// SIGKILL (no release, no Close) and checks that this process takes the
// lease once it expires.
func TestLeaseOfKilledHolder(t *testing.T) {
	srv := redistest.Start(t)
	const leaseTTL = 500 * time.Millisecond
	s := open(t, srv, session.Options{LeaseTTL: leaseTTL})
	ctx := t.Context()
	id := session.NewUUID()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelperURL+"="+srv.URL(0), envHelperID+"="+id, envHelperTTL+"="+leaseTTL.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "held\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q, %v; stderr:\n%s", line, err, stderr.String())
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = s.Lease(short, id)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("took the lease the helper holds: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	start := time.Now()
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatalf("Lease after its holder was killed: %v", err)
	}
	defer release()
	if took := time.Since(start); took > leaseTTL+5*time.Second {
		t.Errorf("took %v to get a dead holder's lease of TTL %v", took, leaseTTL)
	}
}

// TestCloseEndsWaitersAndLeases closes a store with a lease held and a
// waiter: the waiter returns, the lease is given back (another store
// takes it at once) and no goroutine is left (TestMain's leaktest).
func TestCloseEndsWaitersAndLeases(t *testing.T) {
	srv := redistest.Start(t)
	s, err := Open(t.Context(), srv.URL(0), session.Options{LeaseTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	other := open(t, srv, session.Options{})
	ctx := t.Context()
	id := session.NewUUID()
	if _, err := s.Lease(ctx, id); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := s.Lease(ctx, id); got <- err }()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err == nil {
		t.Error("a waiter got a lease from a closed store")
	}
	release, err := other.Lease(ctx, id)
	if err != nil {
		t.Fatalf("the lease of a closed store: %v", err)
	}
	release()
	if _, _, err := s.Get(ctx, id); err == nil || errors.Is(err, session.ErrUnavailable) {
		t.Errorf("Get on a closed store: %v, want a plain error", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestLeaseWakesLocalWaiter checks that a release in this process wakes
// its waiters at once: with the tries of a waiter an hour apart, only the
// wake-up can hand the lease over.
func TestLeaseWakesLocalWaiter(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	const waiters = 3
	// Each waiter waits at most once per holder before it: room for
	// every signal.
	waiting := make(chan struct{}, waiters*(waiters+1))
	s.minWait, s.maxWait = time.Hour, time.Hour
	s.onWait = func() { waiting <- struct{}{} }
	// A guard against a waiter that is never woken.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	id := session.NewUUID()
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, waiters)
	for range waiters {
		go func() {
			rel, err := s.Lease(ctx, id)
			if err == nil {
				rel()
			}
			got <- err
		}()
	}
	for range waiters {
		<-waiting
	}
	release()
	for range waiters {
		if err := <-got; err != nil {
			t.Fatalf("a waiter after release: %v", err)
		}
	}
}
