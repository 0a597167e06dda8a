package respschema

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzCompileValidate: whatever the schema and the value, Compile
// refuses with an *Error or compiles, and Validate ends with nil, an
// *InvalidError, or its step limit; neither panics.
func FuzzCompileValidate(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"integer","minimum":0}},"required":["a"]}`, `{"a":1}`)
	f.Add(`{"$defs":{"n":{"properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`, `{"next":{"next":{}}}`)
	f.Add(`{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}],"$defs":{"a":{"anyOf":[{"$ref":"#"},true]}}}`, `[1,2]`)
	f.Add(`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}],"additionalItems":false,"dependencies":{"a":["b"]}}`, `["x",1]`)
	f.Add(`{"unevaluatedProperties":false,"allOf":[{"properties":{"a":true}}],"oneOf":[{"const":1e2},{"enum":[[1,{"x":null}]]}]}`, `{"a":100}`)
	f.Add(`{"$id":"https://x/r.json","$defs":{"b":{"$id":"b.json","$anchor":"b","type":"string"}},"properties":{"p":{"$ref":"b.json#b"}}}`, `{"p":"s"}`)
	f.Add(`{"prefixItems":[true],"items":false,"contains":{"multipleOf":0.5},"minContains":0,"uniqueItems":true}`, `[1,1.5,1e400]`)
	f.Fuzz(func(t *testing.T, schema, value string) {
		s, err := Compile([]byte(schema))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind < Invalid || e.Kind > TooComplex || !strings.HasPrefix(e.At, "#") {
				t.Fatalf("Compile: %#v", err)
			}
			return
		}
		dec := json.NewDecoder(strings.NewReader(value))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = s.validate(ctx, v, 200_000)
		if err != nil && !IsInvalid(err) && !errors.Is(err, ErrTooLong) {
			t.Fatalf("Validate: %v", err)
		}
		if err != nil {
			_ = err.Error()
		}
	})
}
