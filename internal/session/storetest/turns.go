package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func (c *conformance) turns(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Fatalf("LoadTurns of a session never recorded: %s %v %v", turns, ok, err)
	}
	in := []string{
		`{ "role": "user",  "parts": [ { "text": "héllo\nwörld \u2028 \"quoted\"" } ] }`,
		`"a plain string"`,
		`[1, 2.5, null, true]`,
		`{"nested":{"deep":{"deeper":[{}]}}}`,
	}
	for _, turn := range in {
		if err := s.AppendTurn(ctx, idA, json.RawMessage(turn)); err != nil {
			t.Fatal(err)
		}
	}
	turns, ok, err := s.LoadTurns(ctx, idA)
	if !ok || err != nil || len(turns) != len(in) {
		t.Fatalf("LoadTurns: %d turns, ok %v, err %v; want %d", len(turns), ok, err, len(in))
	}
	for i, turn := range in {
		// A turn comes back as the same JSON value, compacted.
		var want strings.Builder
		var v any
		if err := json.Unmarshal([]byte(turn), &v); err != nil {
			t.Fatal(err)
		}
		var got any
		if err := json.Unmarshal(turns[i], &got); err != nil {
			t.Fatalf("turn %d is not JSON: %s", i, turns[i])
		}
		if fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("turn %d = %s, want the value of %s", i, turns[i], turn)
		}
		want.WriteString(compact(t, turn))
		if string(turns[i]) != want.String() {
			t.Errorf("turn %d = %s, want it compacted: %s", i, turns[i], want.String())
		}
	}
	// A turn that is not JSON is refused and changes nothing.
	for _, bad := range []string{``, `{"open": `, `not json`, `{"a":1} {"b":2}`} {
		if err := s.AppendTurn(ctx, idA, json.RawMessage(bad)); err == nil {
			t.Errorf("AppendTurn accepted %q", bad)
		}
		if err := s.AppendTurn(ctx, idB, json.RawMessage(bad)); err == nil {
			t.Errorf("AppendTurn accepted %q", bad)
		}
	}
	if turns, _, err := s.LoadTurns(ctx, idA); err != nil || len(turns) != len(in) {
		t.Errorf("after refused turns: %d turns, %v; want %d", len(turns), err, len(in))
	}
	if turns, ok, err := s.LoadTurns(ctx, idB); ok || len(turns) != 0 || err != nil {
		t.Errorf("a refused first turn recorded something: %s %v %v", turns, ok, err)
	}
	// Turns alone make no record: the caller's Touch does.
	if _, ok, err := s.Get(ctx, idA); ok || err != nil {
		t.Errorf("Get of a session with turns but no Touch: ok %v, err %v", ok, err)
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	var v json.RawMessage
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v) // Marshal compacts a RawMessage
	if err != nil {
		t.Fatal(err)
	}
	b.Write(out)
	return b.String()
}

func (c *conformance) concurrentAppends(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := s.AppendTurn(ctx, idA, json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	turns, ok, err := s.LoadTurns(ctx, idA)
	if !ok || err != nil || len(turns) != workers*each {
		t.Fatalf("LoadTurns after %d concurrent appends: %d turns, ok %v, err %v", workers*each, len(turns), ok, err)
	}
	next := make([]int, workers) // each writer's turns in the order it wrote them
	for _, turn := range turns {
		var v struct{ W, I int }
		if err := json.Unmarshal(turn, &v); err != nil {
			t.Fatal(err)
		}
		if v.I != next[v.W] {
			t.Fatalf("writer %d's turn %d came after its turn %d", v.W, v.I, next[v.W]-1)
		}
		next[v.W]++
	}
}
