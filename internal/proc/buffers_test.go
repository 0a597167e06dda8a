package proc

import (
	"reflect"
	"testing"
)

func TestSetEnv(t *testing.T) {
	got := SetEnv([]string{"A=1", "GEMINI_SYSTEM_MD=old", "B=2"}, "GEMINI_SYSTEM_MD", "/new")
	want := []string{"A=1", "B=2", "GEMINI_SYSTEM_MD=/new"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestBuffers(t *testing.T) {
	overflows := 0
	c := NewCappedBuffer(5, func() { overflows++ })
	c.Write([]byte("abc"))
	c.Write([]byte("defg"))
	c.Write([]byte("h"))
	if string(c.Bytes()) != "abcde" || !c.Overflowed() || overflows != 1 {
		t.Fatalf("capped: %q %v %d", c.Bytes(), c.Overflowed(), overflows)
	}
	tb := NewTailBuffer(4)
	tb.Write([]byte("ab"))
	tb.Write([]byte("cdef"))
	if tb.String() != "cdef" {
		t.Fatalf("tail: %q", tb.String())
	}
	tb.Write([]byte("g"))
	if tb.String() != "defg" {
		t.Fatalf("tail: %q", tb.String())
	}
	tb.Write([]byte("0123456789"))
	if tb.String() != "6789" || tb.total != 17 {
		t.Fatalf("tail: %q %d", tb.String(), tb.total)
	}
}
