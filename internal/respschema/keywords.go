package respschema

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The keywords that one draft has and the other does not, and those
// refused whatever the draft. Any other keyword this package does not
// know is ignored, as JSON Schema says; one of the other draft is
// refused, since the schema's draft would ignore it without a word.
var (
	// Keywords of draft 2020-12 that draft-07 does not have.
	only2020 = []string{"prefixItems", "dependentSchemas", "dependentRequired", "unevaluatedItems",
		"unevaluatedProperties", "minContains", "maxContains", "$anchor"}
	// Keywords of draft-07 that draft 2020-12 replaced.
	only7 = map[string]string{
		"additionalItems": "in draft 2020-12, items after prefixItems replaces additionalItems",
		"dependencies":    "in draft 2020-12, dependentRequired and dependentSchemas replace dependencies",
	}
	// Keywords neither the Gemini API nor this server takes.
	refused = map[string]string{
		"$dynamicRef":      "dynamic references",
		"$dynamicAnchor":   "dynamic references",
		"$recursiveRef":    "recursive references (draft 2019-09)",
		"$recursiveAnchor": "recursive references (draft 2019-09)",
		"$vocabulary":      "vocabularies",
	}
	simpleTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}
	anchorRE    = regexp.MustCompile(`^[A-Za-z_][-A-Za-z0-9._]*$`)
)

// keywords reads the keywords of the subschema m at sc into n.
func (c *compiler) keywords(n *node, m map[string]any, sc scope) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if what, ok := refused[k]; ok {
			return unsupported(sc, "%s: neither the Gemini API nor this server supports %s", k, what)
		}
		if c.draft == draft7 && slices.Contains(only2020, k) {
			return unsupported(sc, "%s is a keyword of draft 2020-12, and this schema says it is draft-07 ($schema), which would ignore it", k)
		}
		if why, ok := only7[k]; ok && c.draft == draft2020 {
			return unsupported(sc, "%s is a keyword of draft-07, which draft 2020-12 ignores (%s); say \"$schema\": \"http://json-schema.org/draft-07/schema#\" for draft-07", k, why)
		}
	}
	if r, ok := m["$ref"]; ok {
		str, ok := r.(string)
		if !ok {
			return invalid(sc, "$ref: not a string")
		}
		n.ref = str
		n.refOnly = c.draft == draft7
		c.pending = append(c.pending, pendingRef{n: n, base: sc.base})
	}
	for _, k := range keys {
		if err := c.keyword(n, k, m[k], sc); err != nil {
			return err
		}
	}
	n.numeric = n.multipleOfSet || n.minimumSet || n.maximumSet || n.exclusiveMinimumSet || n.exclusiveMaximumSet
	return nil
}

// keyword reads one keyword.
func (c *compiler) keyword(n *node, k string, v any, sc scope) error {
	sub := func() (*node, error) { return c.compile(v, sc.child(k), false) }
	list := func(nonEmpty bool) ([]*node, error) {
		a, ok := v.([]any)
		if !ok || (nonEmpty && len(a) == 0) {
			return nil, invalid(sc, "%s: not a non-empty array of schemas", k)
		}
		out := make([]*node, len(a))
		ksc := sc.child(k)
		for i, e := range a {
			var err error
			if out[i], err = c.compile(e, ksc.child(fmt.Sprint(i)), false); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	schemaMap := func() (map[string]*node, []string, error) {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, nil, invalid(sc, "%s: not an object of schemas", k)
		}
		out := make(map[string]*node, len(mm))
		names := make([]string, 0, len(mm))
		ksc := sc.child(k)
		for name, e := range mm {
			s, err := c.compile(e, ksc.child(name), false)
			if err != nil {
				return nil, nil, err
			}
			out[name] = s
			names = append(names, name)
		}
		sort.Strings(names)
		return out, names, nil
	}
	var err error
	switch k {
	case "$ref", "$id", "$anchor", "$schema":
		// Read by identify and keywords.
	case "$comment", "title", "description", "format", "contentEncoding", "contentMediaType":
		if _, ok := v.(string); !ok {
			return invalid(sc, "%s: not a string", k)
		}
	case "default":
	case "examples":
		if _, ok := v.([]any); !ok {
			return invalid(sc, "examples: not an array")
		}
	case "readOnly", "writeOnly", "deprecated", "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			return invalid(sc, "%s: not a boolean", k)
		}
		if k == "uniqueItems" {
			n.uniqueItems = b
		}
	case "propertyOrdering": // the Gemini API's own
		if _, err := stringSet(v); err != nil {
			return invalid(sc, "propertyOrdering: %v", err)
		}
	case "$defs", "definitions":
		_, _, err = schemaMap()
	case "contentSchema":
		_, err = sub() // an annotation: checked, never applied
	case "type":
		n.typeSet = true
		switch x := v.(type) {
		case string:
			n.types = []string{x}
		case []any:
			if len(x) == 0 {
				return invalid(sc, "type: an empty list; name at least one of %s", strings.Join(simpleTypes, ", "))
			}
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return invalid(sc, "type: the list holds %s, not a type name", describe(e))
				}
				if slices.Contains(n.types, s) {
					return invalid(sc, "type: the list names %q twice", clip(s))
				}
				n.types = append(n.types, s)
			}
		default:
			return invalid(sc, "type: %s, not a type name or a list of them", describe(v))
		}
		for _, t := range n.types {
			if !slices.Contains(simpleTypes, t) {
				return invalid(sc, "type: %q is not a JSON Schema type; the types are %s", clip(t), strings.Join(simpleTypes, ", "))
			}
		}
	case "enum":
		a, ok := v.([]any)
		if !ok {
			return invalid(sc, "enum: not an array")
		}
		n.enum = schemaValue(a).([]any)
	case "const":
		n.hasConst, n.constVal = true, schemaValue(v)
	case "multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		r, ok := number(v)
		if !ok {
			return invalid(sc, "%s: not a number", k)
		}
		switch k {
		case "multipleOf":
			if r.Sign() <= 0 {
				return invalid(sc, "multipleOf: %s is not greater than 0", ratString(r))
			}
			n.multipleOf, n.multipleOfSet = r, true
		case "minimum":
			n.minimum, n.minimumSet = r, true
		case "maximum":
			n.maximum, n.maximumSet = r, true
		case "exclusiveMinimum":
			n.exclusiveMinimum, n.exclusiveMinimumSet = r, true
		case "exclusiveMaximum":
			n.exclusiveMaximum, n.exclusiveMaximumSet = r, true
		}
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains":
		r, ok := number(v)
		if !ok || !r.IsInt() || r.Sign() < 0 {
			return invalid(sc, "%s: %s is not a non-negative integer", k, describe(v))
		}
		i := 1 << 62
		if r.Num().IsInt64() && r.Num().Int64() < int64(i) {
			i = int(r.Num().Int64())
		}
		switch k {
		case "minLength":
			n.minLength = i
		case "maxLength":
			n.maxLength = i
		case "minItems":
			n.minItems = i
		case "maxItems":
			n.maxItems = i
		case "minProperties":
			n.minProperties = i
		case "maxProperties":
			n.maxProperties = i
		case "minContains":
			n.minContains, n.minContainsSet = i, true
		case "maxContains":
			n.maxContains, n.maxContainsSet = i, true
		}
	case "pattern":
		s, ok := v.(string)
		if !ok {
			return invalid(sc, "pattern: not a string")
		}
		if n.pattern, err = regexp.Compile(s); err != nil {
			return invalid(sc, "pattern %q: not a regular expression this server can read: %v", clip(s), err)
		}
	case "required":
		if n.required, err = stringSet(v); err != nil {
			return invalid(sc, "required: %v", err)
		}
	case "dependentRequired":
		mm, ok := v.(map[string]any)
		if !ok {
			return invalid(sc, "dependentRequired: not an object")
		}
		n.dependentRequired = map[string][]string{}
		for name, e := range mm {
			if n.dependentRequired[name], err = stringSet(e); err != nil {
				return invalid(sc, "dependentRequired[%q]: %v", clip(name), err)
			}
			n.dependentRequiredNames = append(n.dependentRequiredNames, name)
		}
		sort.Strings(n.dependentRequiredNames)
	case "dependencies": // draft-07
		mm, ok := v.(map[string]any)
		if !ok {
			return invalid(sc, "dependencies: not an object")
		}
		n.dependentRequired, n.dependentSchemas = map[string][]string{}, map[string]*node{}
		ksc := sc.child(k)
		for name, e := range mm {
			if a, ok := e.([]any); ok {
				if n.dependentRequired[name], err = stringSet(a); err != nil {
					return invalid(sc, "dependencies[%q]: %v", clip(name), err)
				}
				n.dependentRequiredNames = append(n.dependentRequiredNames, name)
				continue
			}
			if n.dependentSchemas[name], err = c.compile(e, ksc.child(name), false); err != nil {
				return err
			}
			n.dependentSchemaNames = append(n.dependentSchemaNames, name)
		}
		sort.Strings(n.dependentRequiredNames)
		sort.Strings(n.dependentSchemaNames)
	case "allOf":
		n.allOf, err = list(true)
	case "anyOf":
		n.anyOf, err = list(true)
	case "oneOf":
		n.oneOf, err = list(true)
	case "prefixItems":
		n.prefixItems, err = list(true)
	case "items":
		if _, ok := v.([]any); ok {
			if c.draft == draft2020 {
				return unsupported(sc, "items: a list of schemas is draft-07's form; in draft 2020-12 it is prefixItems")
			}
			n.prefixItems, err = list(false)
			n.itemsArray = true
		} else {
			n.items, err = sub()
		}
	case "not":
		n.not, err = sub()
	case "if":
		n.ifS, err = sub()
	case "then":
		n.thenS, err = sub()
	case "else":
		n.elseS, err = sub()
	case "additionalItems":
		n.additionalItems, err = sub()
	case "contains":
		n.contains, err = sub()
	case "additionalProperties":
		n.additionalProperties, err = sub()
	case "propertyNames":
		n.propertyNames, err = sub()
	case "unevaluatedItems":
		n.unevaluatedItems, err = sub()
	case "unevaluatedProperties":
		n.unevaluatedProperties, err = sub()
	case "properties":
		n.properties, n.propertyKeys, err = schemaMap()
	case "dependentSchemas":
		n.dependentSchemas, n.dependentSchemaNames, err = schemaMap()
	case "patternProperties":
		var ps map[string]*node
		var names []string
		if ps, names, err = schemaMap(); err != nil {
			return err
		}
		for _, p := range names {
			re, err := regexp.Compile(p)
			if err != nil {
				return invalid(sc, "patternProperties: %q is not a regular expression this server can read: %v", clip(p), err)
			}
			n.patternProperties = append(n.patternProperties, patternProperty{re: re, n: ps[p]})
		}
	}
	return err
}

// stringSet reads a list of distinct strings.
func stringSet(v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s, not a list of strings", describe(v))
	}
	out := make([]string, 0, len(a))
	for _, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("the list holds %s, not a string", describe(e))
		}
		if slices.Contains(out, s) {
			return nil, fmt.Errorf("the list names %q twice", clip(s))
		}
		out = append(out, s)
	}
	return out, nil
}

// describe names v's JSON kind, with v when it is short.
func describe(v any) string {
	switch jsonType(v) {
	case "array", "object":
		return show(v)
	case "null":
		return "null"
	}
	return jsonType(v) + " " + show(v)
}
