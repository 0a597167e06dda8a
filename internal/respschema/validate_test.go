package respschema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func compile(t testing.TB, s any) *Schema {
	t.Helper()
	raw, ok := s.(string)
	if !ok {
		raw = string(mustJSON(t, s))
	}
	sc, err := Compile([]byte(raw))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return sc
}

// TestValidateSays: a value that does not satisfy the schema gets an
// *InvalidError that names where, the keyword, and what is wrong.
func TestValidateSays(t *testing.T) {
	s := compile(t, `{"type":"object","required":["name","stars","tags"],"additionalProperties":false,
		"properties":{"name":{"type":"string","minLength":2,"pattern":"^[a-z]+$"},"stars":{"type":"integer","minimum":0,"multipleOf":0.5},
		"tags":{"type":"array","items":{"enum":["a","b"]},"uniqueItems":true,"maxItems":3},
		"price":{"anyOf":[{"type":"number","exclusiveMinimum":0},{"type":"null"}]},"kind":{"oneOf":[{"const":"x"},{"type":"string","maxLength":1}]}}}`)
	for _, c := range []struct{ value, want string }{
		{`{"name":"ab","stars":3,"tags":["a"]}`, ""},
		{`{"name":"ab","stars":3.0,"tags":[],"price":null}`, ""},
		{`{"name":"ab","stars":-3,"tags":["a"]}`, "at /stars: minimum: -3 is less than 0"},
		{`{"name":"ab","stars":1.5,"tags":["a"]}`, `at /stars: type: 1.5 is a number, not integer`},
		{`{"name":"ab","stars":3,"tags":["a"],"extra":1}`, `at the top level: additionalProperties: the property "extra" is not allowed`},
		{`{"name":"ab","tags":["a"]}`, `at the top level: required: missing "stars"`},
		{`{"name":"a","stars":1,"tags":[]}`, "at /name: minLength: the string has 1 characters, fewer than 2"},
		{`{"name":"AB","stars":1,"tags":[]}`, `at /name: pattern: "AB" does not match ^[a-z]+$`},
		{`{"name":"ab","stars":1,"tags":["a","c"]}`, `at /tags/1: enum: "c" is none of the 2 values allowed`},
		{`{"name":"ab","stars":1,"tags":["a","a"]}`, "at /tags: uniqueItems: items 0 and 1 are equal"},
		{`{"name":"ab","stars":1,"tags":["a","b","a"]}`, "at /tags: uniqueItems: items 0 and 2 are equal"},
		{`{"name":"ab","stars":1,"tags":[],"price":0}`, "at /price: anyOf: matches none of the 2 choices; choice 0: at /price: exclusiveMinimum: 0 is not greater than 0; choice 1: at /price: type: 0 is a number, not null"},
		{`{"name":"ab","stars":1,"tags":[],"kind":"x"}`, "at /kind: oneOf: matches choices 0 and 1; exactly one is allowed"},
		{`[]`, "at the top level: type: an array of 0 items is an array, not object"},
	} {
		err := s.Validate(context.Background(), decode(t, c.value))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.value, err)
		case c.want != "" && (err == nil || !IsInvalid(err) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.value, err, c.want)
		}
	}
}

// TestValidateNumbers: numbers are compared exactly, and a number whose
// text asks for an enormous value costs no more than another.
func TestValidateNumbers(t *testing.T) {
	s := compile(t, `{"type":"object","properties":{"cents":{"multipleOf":0.01},"big":{"type":"integer","maximum":9007199254740993},"any":{"type":"number"}}}`)
	for _, c := range []struct {
		value string
		ok    bool
	}{
		{`{"cents":0.07}`, true},
		{`{"cents":19.99}`, true},
		{`{"cents":0.075}`, false},
		{`{"big":9007199254740993}`, true},
		{`{"big":9007199254740994}`, false}, // equal as float64s
		{`{"big":1e2}`, true},
		{`{"big":1e999999999}`, false},
		{`{"any":1e999999999}`, true},
		{`{"cents":1e-999999999}`, true}, // read as a float64: 0
		{`{"any":-1e999999999}`, true},
	} {
		start := time.Now()
		err := s.Validate(context.Background(), decode(t, c.value))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.value, err, c.ok)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s took %v", c.value, d)
		}
	}
}

// large is a schema within the limits that takes long to check an
// answer against: an array of items that each match only the last of 40
// choices of 20 properties.
func large(t testing.TB) (*Schema, any) {
	t.Helper()
	var choices []any
	for i := range 40 {
		props := map[string]any{"k": map[string]any{"const": i}}
		for j := range 20 {
			props[fmt.Sprintf("p%d", j)] = map[string]any{"type": "string", "maxLength": 100}
		}
		choices = append(choices, map[string]any{"type": "object", "required": []any{"k"}, "properties": props})
	}
	s := compile(t, map[string]any{"type": "object", "$defs": map[string]any{"item": map[string]any{"anyOf": choices}},
		"properties": map[string]any{"items": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/item"}}}})
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i := range 1500 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"k":39`)
		for j := range 20 {
			fmt.Fprintf(&b, `,"p%d":"v"`, j)
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return s, decode(t, b.String())
}

// stoppingCtx is a context whose Err says Canceled from its n-th call on,
// and that says when its Err is first called.
type stoppingCtx struct {
	context.Context
	mu      sync.Mutex
	calls   int
	n       int
	started chan struct{}
}

func (c *stoppingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls == 1 && c.started != nil {
		close(c.started)
	}
	if c.n > 0 && c.calls >= c.n {
		return context.Canceled
	}
	return c.Context.Err()
}

// TestValidateStopsWhenCancelled: a validation of a large answer against
// a large schema, both within the limits, stops when its context ends,
// within a few thousand steps: the call's context, which ends when its
// client cancels it or goes away.
func TestValidateStopsWhenCancelled(t *testing.T) {
	s, v := large(t)
	total, err := s.run(context.Background(), v, MaxSteps)
	if err != nil {
		t.Fatalf("the whole validation: %v", err)
	}
	if total < 1_000_000 {
		t.Fatalf("the whole validation took %d steps; the test wants a long one", total)
	}

	// The context ends at its fifth look: the validation stops there.
	ctx := &stoppingCtx{Context: context.Background(), n: 5}
	steps, err := s.run(ctx, v, MaxSteps)
	if !errors.Is(err, context.Canceled) || IsInvalid(err) {
		t.Fatalf("validation with a context that ended: %v", err)
	}
	if steps > 5*checkEvery+100 || ctx.calls != 5 {
		t.Errorf("it stopped after %d steps and %d looks at the context, want at most %d and 5", steps, ctx.calls, 5*checkEvery+100)
	}

	// A context cancelled from elsewhere while the validation runs.
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	ctx = &stoppingCtx{Context: parent, started: started}
	go func() {
		<-started
		cancel()
	}()
	t0 := time.Now()
	steps, err = s.run(ctx, v, MaxSteps)
	if !errors.Is(err, context.Canceled) || steps >= total {
		t.Fatalf("validation cancelled while it ran: %v after %d of %d steps", err, steps, total)
	}
	t.Logf("the whole validation: %d steps; cancelled: stopped after %d steps, %v", total, steps, time.Since(t0))

	// Validate itself: a context that has ended stops it before it starts.
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if err := s.Validate(done, v); !errors.Is(err, context.Canceled) {
		t.Errorf("Validate with an ended context: %v", err)
	}
}

// TestValidateBounded: past its step limit a validation stops with
// ErrTooLong, which an anyOf, a not or an if does not take for a failed
// choice.
func TestValidateBounded(t *testing.T) {
	s, v := large(t)
	if err := s.validate(context.Background(), v, 100_000); !errors.Is(err, ErrTooLong) || IsInvalid(err) {
		t.Errorf("a validation past its limit: %v", err)
	}
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}}}`,
		`{"type":"object","properties":{"a":{"not":{"type":"array","items":{"type":"string"}}}}}`,
		`{"type":"object","properties":{"a":{"if":{"type":"array","items":{"type":"string"}},"else":true}}}`,
		`{"type":"object","properties":{"a":{"oneOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}}}`,
	} {
		s := compile(t, schema)
		a := make([]any, 5000)
		for i := range a {
			a[i] = "x"
		}
		if err := s.validate(context.Background(), map[string]any{"a": a}, 1000); !errors.Is(err, ErrTooLong) {
			t.Errorf("%s: %v, want ErrTooLong", schema, err)
		}
	}
}

// TestValidateRecursive: a recursive schema checks a deep value, as deep
// as it goes.
func TestValidateRecursive(t *testing.T) {
	s := compile(t, `{"type":"object","$defs":{"n":{"type":"object","required":["v"],"properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/n"}}}},
		"properties":{"list":{"$ref":"#/$defs/n"}}}`)
	deep := `{"v":1}`
	for range 300 {
		deep = `{"v":1,"next":` + deep + `}`
	}
	if err := s.Validate(context.Background(), decode(t, `{"list":`+deep+`}`)); err != nil {
		t.Errorf("a deep list: %v", err)
	}
	bad := strings.Replace(deep, `{"v":1}`, `{"v":"x"}`, 1)
	err := s.Validate(context.Background(), decode(t, `{"list":`+bad+`}`))
	var ie *InvalidError
	if !errors.As(err, &ie) || ie.At() != "/list"+strings.Repeat("/next", 300)+"/v" || ie.Keyword() != "type" {
		t.Fatalf("a deep list with a bad value: %v", err)
	}
	// Its text names the start and the end of so deep a place.
	if text := err.Error(); len(text) > 600 || !strings.HasPrefix(text, "at /list/next/") || !strings.Contains(text, "…") ||
		!strings.HasSuffix(text, `/next/v: type: "x" is a string, not integer`) {
		t.Errorf("the error's text: %s", text)
	}
}

func BenchmarkValidateLarge(b *testing.B) {
	s, v := large(b)
	for b.Loop() {
		if err := s.Validate(context.Background(), v); err != nil {
			b.Fatal(err)
		}
	}
}

// TestValidateBranchingRecursion: a recursive schema whose every level
// offers two choices is within the limits (it ends with the value), yet
// a value forty levels deep that fails at its bottom would take 2^40
// paths: the validation stops at its step limit, keeping little of the
// failures it met (a limit of a tenth of MaxSteps keeps the test short
// under the race detector).
func TestValidateBranchingRecursion(t *testing.T) {
	level := map[string]any{"type": "object", "required": []any{"x"}, "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/n"}}}
	s := compile(t, map[string]any{"type": "object", "$defs": map[string]any{"n": map[string]any{"anyOf": []any{level, level}}},
		"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/n"}}})
	deep := `{"x":1}`
	for range 40 {
		deep = `{"x":` + deep + `}`
	}
	v := decode(t, deep)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	steps, err := s.run(context.Background(), v, MaxSteps/10)
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLong) || steps <= MaxSteps/10 {
		t.Fatalf("validation: %v after %d steps, want ErrTooLong past %d", err, steps, MaxSteps/10)
	}
	if grown := int64(after.HeapInuse) - int64(before.HeapInuse); grown > 64<<20 {
		t.Errorf("the heap grew by %d MB", grown>>20)
	}
	t.Logf("stopped after %v; heap in use %d MB → %d MB", d, before.HeapInuse>>20, after.HeapInuse>>20)
}
