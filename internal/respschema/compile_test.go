package respschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostile is levels levels of anyOf of two references to the next level:
// 2^levels subschemas once the references are followed.
func hostile(levels int) map[string]any {
	defs := map[string]any{}
	for i := range levels {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": []any{next, next}}
	}
	defs[fmt.Sprintf("d%d", levels)] = map[string]any{"type": "string"}
	return map[string]any{"type": "object", "$defs": defs, "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/d0"}}}
}

// nested is a schema whose subschemas nest depth deep.
func nested(depth int) map[string]any {
	s := map[string]any{"type": "string"}
	for range depth {
		s = map[string]any{"type": "object", "properties": map[string]any{"a": s}}
	}
	return s
}

func TestCompileRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema any
		kind   Kind
		at     string
		says   []string
	}{
		{"a type that is none", map[string]any{"type": "object", "properties": map[string]any{"age": map[string]any{"type": "numbr"}}},
			Invalid, "#/properties/age", []string{`type: "numbr" is not a JSON Schema type`, "array, boolean, integer, null, number, object, string"}},
		{"a type list with one that is none", map[string]any{"type": []any{"string", "nul"}}, Invalid, "#", []string{`"nul" is not a JSON Schema type`}},
		{"a type list naming one twice", map[string]any{"type": []any{"string", "string"}}, Invalid, "#", []string{"twice"}},
		{"an empty type list", map[string]any{"type": []any{}}, Invalid, "#", []string{"empty list"}},
		{"a type of the wrong kind", map[string]any{"type": 5}, Invalid, "#", []string{"type: integer 5"}},
		{"a subschema of the wrong kind", map[string]any{"properties": map[string]any{"s": "string"}}, Invalid, "#/properties/s", []string{"a schema is a JSON object or a boolean"}},
		{"required not a list", map[string]any{"required": "name"}, Invalid, "#", []string{"required: string \"name\", not a list of strings"}},
		{"required with a repeat", map[string]any{"required": []any{"a", "a"}}, Invalid, "#", []string{`names "a" twice`}},
		{"a negative minItems", map[string]any{"minItems": -1}, Invalid, "#", []string{"minItems: integer -1 is not a non-negative integer"}},
		{"a fractional maxLength", map[string]any{"maxLength": 1.5}, Invalid, "#", []string{"maxLength"}},
		{"a zero multipleOf", map[string]any{"multipleOf": 0}, Invalid, "#", []string{"multipleOf: 0 is not greater than 0"}},
		{"a bad pattern", map[string]any{"pattern": "(a"}, Invalid, "#", []string{"not a regular expression"}},
		{"a bad patternProperties", map[string]any{"patternProperties": map[string]any{"(a": true}}, Invalid, "#", []string{"not a regular expression"}},
		{"an empty anyOf", map[string]any{"anyOf": []any{}}, Invalid, "#", []string{"anyOf: not a non-empty array of schemas"}},
		{"enum not a list", map[string]any{"enum": "a"}, Invalid, "#", []string{"enum: not an array"}},
		{"a description not a string", map[string]any{"description": 1}, Invalid, "#", []string{"description: not a string"}},
		{"a ref to nothing", map[string]any{"$ref": "#/$defs/missing"}, Invalid, "#", []string{"points at no subschema"}},
		{"a ref into an enum", map[string]any{"enum": []any{1}, "properties": map[string]any{"a": map[string]any{"$ref": "#/enum/0"}}}, Invalid, "#/properties/a", []string{"points at no subschema"}},
		{"a bad anchor", map[string]any{"$anchor": "1x"}, Invalid, "#", []string{"$anchor: not a plain name"}},
		{"a remote ref", map[string]any{"$ref": "https://example.com/s.json"}, Unsupported, "#", []string{"points outside the schema"}},
		{"a relative remote ref", map[string]any{"properties": map[string]any{"a": map[string]any{"$ref": "other.json#/x"}}}, Unsupported, "#/properties/a", []string{"points outside the schema"}},
		{"draft-04", map[string]any{"$schema": "http://json-schema.org/draft-04/schema#"}, Unsupported, "#", []string{"draft 2020-12", "draft-07"}},
		{"a dynamic reference", map[string]any{"$dynamicRef": "#x"}, Unsupported, "#", []string{"dynamic references"}},
		{"draft-07's items list in draft 2020-12", map[string]any{"items": []any{true}}, Unsupported, "#", []string{"prefixItems"}},
		{"draft-07's additionalItems in draft 2020-12", map[string]any{"additionalItems": false}, Unsupported, "#", []string{"draft-07"}},
		{"draft-07's dependencies in draft 2020-12", map[string]any{"dependencies": map[string]any{}}, Unsupported, "#", []string{"dependentRequired"}},
		{"draft 2020-12's prefixItems in draft-07", map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "prefixItems": []any{true}}, Unsupported, "#", []string{"draft 2020-12", "ignore"}},
		{"a subschema changing the draft", map[string]any{"properties": map[string]any{"a": map[string]any{"$schema": "http://json-schema.org/draft-07/schema#"}}}, Unsupported, "#/properties/a", []string{"cannot change the draft"}},
		{"a $ref to itself", map[string]any{"$defs": map[string]any{"x": map[string]any{"$ref": "#/$defs/x"}}, "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/x"}}},
			Invalid, "#/$defs/x", []string{"leads back to #/$defs/x", "never end"}},
		{"a root that refers to itself through allOf", map[string]any{"allOf": []any{map[string]any{"$ref": "#"}}}, Invalid, "#/allOf/0", []string{"never end"}},
		{"a loop through not and anyOf", map[string]any{"$defs": map[string]any{"a": map[string]any{"not": map[string]any{"$ref": "#/$defs/b"}}, "b": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/a"}}}},
			"$ref": "#/$defs/a"}, Invalid, "#/$defs/b/anyOf/0", []string{"never end"}},
		{"forty levels of anyOf", hostile(40), TooComplex, "", []string{"this server's limit"}},
		{"subschemas nested too deep", nested(MaxDepth + 1), TooComplex, "", []string{"nest more than"}},
		{"references that expand too deep", func() any {
			defs := map[string]any{}
			for i := range MaxDepth + 1 {
				defs[fmt.Sprintf("d%d", i)] = map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}
			}
			defs[fmt.Sprintf("d%d", MaxDepth+1)] = true
			return map[string]any{"$defs": defs, "$ref": "#/$defs/d0"}
		}(), TooComplex, "", []string{"nest more than"}},
		{"not JSON", json.RawMessage(`{"type":`), Invalid, "#", []string{"not JSON"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, ok := c.schema.(json.RawMessage)
			if !ok {
				raw = mustJSON(t, c.schema)
			}
			start := time.Now()
			_, err := Compile(raw)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Compile took %v", d)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Compile: %v, want an *Error", err)
			}
			if e.Kind != c.kind || (c.at != "" && e.At != c.at) {
				t.Errorf("Compile: kind %d at %s (%v), want kind %d at %s", e.Kind, e.At, err, c.kind, c.at)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Compile: %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestCompileTakes: schemas as generators write them compile: references
// to definitions (Pydantic's anyOf with null), recursive types, anchors,
// nested resources, draft-07, Gemini's propertyOrdering, annotations and
// unknown keywords.
func TestCompileTakes(t *testing.T) {
	for name, s := range map[string]string{
		"pydantic": `{"$defs":{"Address":{"properties":{"street":{"title":"Street","type":"string"},"zip":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null}},
			"required":["street"],"title":"Address","type":"object"}},"properties":{"name":{"type":"string"},"home":{"$ref":"#/$defs/Address"},
			"work":{"anyOf":[{"$ref":"#/$defs/Address"},{"type":"null"}]}},"required":["name","home"],"title":"Person","type":"object"}`,
		"recursive": `{"type":"object","$defs":{"node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}},
			"next":{"$ref":"#/$defs/node"}}}},"properties":{"root":{"$ref":"#/$defs/node"}}}`,
		"root recursion": `{"type":"object","properties":{"child":{"$ref":"#"}},"additionalProperties":{"$ref":"#"}}`,
		"anchor":         `{"type":"object","$defs":{"s":{"$anchor":"str","type":"string"}},"properties":{"a":{"$ref":"#str"}}}`,
		"nested $id":     `{"$id":"https://example.com/root.json","type":"object","$defs":{"b":{"$id":"b.json","$defs":{"x":{"type":"integer"}},"$ref":"#/$defs/x"}},"properties":{"a":{"$ref":"b.json"}}}`,
		"draft-07":       `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"n":{"type":"number"}},"properties":{"a":{"$ref":"#/definitions/n","description":"ignored beside $ref"},"t":{"items":[{"type":"string"}],"additionalItems":false}},"dependencies":{"a":["t"]}}`,
		"gemini":         `{"type":"object","propertyOrdering":["b","a"],"properties":{"a":{"type":"string","format":"date-time","title":"A"},"b":{"type":"integer","minimum":0,"maximum":10}},"x-extension":{"anything":[1]}}`,
		"escaped ref":    `{"type":"object","$defs":{"a/b c":{"type":"string"},"t~":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a~1b%20c"},"y":{"$ref":"#/$defs/t~0"}}}`,
		"deep within":    string(mustJSON(t, nested(MaxDepth-1))),
		"forty levels of one reference": func() string {
			defs := map[string]any{}
			for i := range 40 {
				defs[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": []any{map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}, map[string]any{"type": "null"}}}
			}
			defs["d40"] = map[string]any{"type": "string"}
			return string(mustJSON(t, map[string]any{"type": "object", "$defs": defs, "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/d0"}}}))
		}(),
	} {
		if _, err := Compile([]byte(s)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
