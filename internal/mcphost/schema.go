package mcphost

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// maxRefDepth bounds how many $ref expansions nest, so that a schema of
// many references to references cannot grow without end; maxSchemaNodes
// and MaxSchemaBytes bound how wide it grows.
const maxRefDepth = 16

// GeminiSchema turns a tool's input schema into what is declared to the
// Gemini API: the CLI's only transform (a two-entry type with "null"
// becomes the type with nullable: true), plus what the CLI leaves out and
// the API rejects: local $ref references are replaced by what they point
// to and $defs / definitions dropped. A reference back into itself (a
// recursive type) is cut after its first expansion to an object with the
// target's type and description. A schema that is missing or not an
// object becomes an object without properties, as in the CLI. A schema
// that would be larger than MaxSchemaBytes once inlined is an error.
func GeminiSchema(input any) (map[string]any, error) {
	root, ok := normalize(input).(map[string]any)
	if !ok {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	r := &resolver{root: root, active: map[string]bool{}}
	resolved := r.resolve(root, 0)
	if r.nodes > maxSchemaNodes {
		return nil, fmt.Errorf("its input schema grows past %d nodes once its $ref references are inlined (the Gemini API takes no references)", maxSchemaNodes)
	}
	out, _ := resolved.(map[string]any)
	out = nullable(out).(map[string]any)
	if n := jsonSize(out); n > MaxSchemaBytes {
		return nil, fmt.Errorf("its input schema is %d bytes once its $ref references are inlined, over this host's limit of %d", n, MaxSchemaBytes)
	}
	return out, nil
}

// normalize makes a plain JSON value (maps, slices, strings, float64,
// bools) of whatever the SDK decoded, so that the walks below see one
// shape.
func normalize(v any) any {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return nil
	}
	return out
}

type resolver struct {
	root   map[string]any
	active map[string]bool // references being expanded on the current path
	nodes  int             // values made so far; past maxSchemaNodes, nothing more is
}

func (r *resolver) resolve(v any, depth int) any {
	r.nodes++
	if r.nodes > maxSchemaNodes {
		return nil
	}
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.resolve(e, depth)
		}
		return out
	case map[string]any:
		ref, isRef := x["$ref"].(string)
		if !isRef {
			out := make(map[string]any, len(x))
			for k, e := range x {
				if k == "$defs" || k == "definitions" {
					// What the references point to is read from r.root;
					// the copy sent to Gemini needs none of it.
					continue
				}
				out[k] = r.resolve(e, depth)
			}
			return out
		}
		// The siblings of $ref apply together with its target: the
		// target's keywords first, the siblings' over them.
		siblings := make(map[string]any, len(x))
		for k, e := range x {
			if k != "$ref" && k != "$defs" && k != "definitions" {
				siblings[k] = e
			}
		}
		target, found := r.lookup(ref)
		var out map[string]any
		switch {
		case !found:
			// A remote or broken reference: Gemini cannot follow it either,
			// so only what the siblings say is kept.
			out = map[string]any{}
			if _, ok := siblings["description"]; !ok {
				out["description"] = "(schema reference " + ref + " not resolved)"
			}
		case r.active[ref] || depth >= maxRefDepth:
			out = map[string]any{}
			if t, ok := target["type"]; ok {
				out["type"] = t
			}
			if d, ok := target["description"]; ok {
				out["description"] = d
			}
		default:
			r.active[ref] = true
			resolved, _ := r.resolve(target, depth+1).(map[string]any)
			delete(r.active, ref)
			out = resolved
		}
		for k, e := range siblings {
			out[k] = r.resolve(e, depth)
		}
		return out
	default:
		return v
	}
}

// lookup finds a local reference ("#", "#/$defs/Name", any JSON pointer
// into the root schema). It returns false for a remote one.
func (r *resolver) lookup(ref string) (map[string]any, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	frag := ref[1:]
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	var cur any = r.root
	if frag != "" {
		if !strings.HasPrefix(frag, "/") {
			return nil, false
		}
		for _, tok := range strings.Split(frag[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[tok]; !ok {
				return nil, false
			}
		}
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// nullable is the CLI's schema transform (mcp-client.ts discoverTools):
// wherever "type" is a two-entry array of a type name and "null", it
// becomes that type name with nullable: true.
func nullable(v any) any {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			x[i] = nullable(e)
		}
		return x
	case map[string]any:
		if t, ok := x["type"].([]any); ok && len(t) == 2 {
			for i, e := range t {
				if e == "null" {
					if other, ok := t[1-i].(string); ok {
						x["type"] = other
						x["nullable"] = true
					}
					break
				}
			}
		}
		for k, e := range x {
			x[k] = nullable(e)
		}
		return x
	default:
		return v
	}
}
