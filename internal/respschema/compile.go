package respschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

type draft int

const (
	draft2020 draft = iota
	draft7
)

func (d draft) String() string {
	if d == draft7 {
		return "draft-07"
	}
	return "draft 2020-12"
}

// Schema is a compiled schema: checked, its references resolved.
type Schema struct {
	root  *node
	draft draft
}

// node is one subschema.
type node struct {
	at string // its location, a URI fragment: "#", "#/properties/a"

	boolean *bool // a true or false schema; nothing below is set

	ref     string // $ref as written
	target  *node  // what it points to
	refOnly bool   // draft-07 ignores the keywords beside $ref

	// Keywords on the value itself.
	typeSet                      bool
	types                        []string
	enum                         []any // numbers as *big.Rat
	hasConst                     bool
	constVal                     any
	numeric                      bool // has one of the five below
	multipleOf, minimum          *big.Rat
	maximum, exclusiveMinimum    *big.Rat
	exclusiveMaximum             *big.Rat
	multipleOfSet, minimumSet    bool
	maximumSet                   bool
	exclusiveMinimumSet          bool
	exclusiveMaximumSet          bool
	minLength, maxLength         int // -1: absent, as for every count
	pattern                      *regexp.Regexp
	minItems, maxItems           int
	uniqueItems                  bool
	minProperties, maxProperties int
	required                     []string
	dependentRequired            map[string][]string
	dependentRequiredNames       []string // sorted

	// Subschemas applied to the same value.
	allOf, anyOf, oneOf    []*node
	not, ifS, thenS, elseS *node
	dependentSchemas       map[string]*node
	dependentSchemaNames   []string // sorted

	// Subschemas applied to items and properties.
	prefixItems                             []*node // draft-07's items list too
	itemsArray                              bool    // draft-07: items is a list, so additionalItems applies
	items, additionalItems, contains        *node
	minContains, maxContains                int
	minContainsSet, maxContainsSet          bool
	properties                              map[string]*node
	propertyKeys                            []string // properties' names, sorted
	patternProperties                       []patternProperty
	additionalProperties, propertyNames     *node
	unevaluatedItems, unevaluatedProperties *node
}

type patternProperty struct {
	re *regexp.Regexp
	n  *node
}

// resource is a schema resource: the root, or a subschema with an $id
// of its own. References are resolved within them.
type resource struct {
	root    *node
	ptrs    map[string]*node // by JSON pointer from the resource's root
	anchors map[string]*node
}

type compiler struct {
	draft     draft
	resources map[string]*resource
	pending   []pendingRef
}

type pendingRef struct {
	n    *node
	base *url.URL
}

// scope is where a subschema sits: its base URI and the resources it is
// in, each with the pointer from that resource's root to it.
type scope struct {
	base  *url.URL
	res   []*resource
	ptrs  []string
	depth int // subschemas from the root to it, both counted
}

func (s scope) child(token string) scope {
	t := escapeToken(token)
	c := scope{base: s.base, res: s.res, ptrs: make([]string, len(s.ptrs)), depth: s.depth}
	for i, p := range s.ptrs {
		c.ptrs[i] = p + "/" + t
	}
	return c
}

// at is the subschema's location in the whole schema.
func (s scope) at() string {
	if len(s.ptrs) == 0 {
		return "#"
	}
	return "#" + s.ptrs[0]
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// defaultBase is the base URI of a schema without an absolute $id.
const defaultBase = "https://response-schema.invalid/schema.json"

// The $schema values this package validates.
var drafts = map[string]draft{
	"https://json-schema.org/draft/2020-12/schema":  draft2020,
	"https://json-schema.org/draft/2020-12/schema#": draft2020,
	"http://json-schema.org/draft-07/schema#":       draft7,
	"http://json-schema.org/draft-07/schema":        draft7,
	"https://json-schema.org/draft-07/schema#":      draft7,
	"https://json-schema.org/draft-07/schema":       draft7,
}

// Compile checks the schema raw (JSON) and compiles it. Its error is an
// *Error.
func Compile(raw []byte) (*Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &Error{Kind: Invalid, At: "#", Msg: fmt.Sprintf("not JSON: %v", err)}
	}
	if dec.More() {
		return nil, &Error{Kind: Invalid, At: "#", Msg: "more than one JSON value"}
	}
	c := &compiler{resources: map[string]*resource{}}
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["$schema"]; ok {
			str, ok := s.(string)
			if !ok {
				return nil, &Error{Kind: Invalid, At: "#", Msg: "$schema: not a string"}
			}
			d, ok := drafts[str]
			if !ok {
				return nil, &Error{Kind: Unsupported, At: "#", Msg: fmt.Sprintf("$schema %q: this server checks answers against draft 2020-12 (%s, the default) and draft-07 (%s) schemas only",
					clip(str), "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#")}
			}
			c.draft = d
		}
	}
	base, _ := url.Parse(defaultBase)
	root, err := c.compile(v, scope{base: base}, true)
	if err != nil {
		return nil, err
	}
	for _, p := range c.pending {
		if err := c.resolve(p); err != nil {
			return nil, err
		}
	}
	x := &expander{onStack: map[*node]int{}}
	if err := x.expand(root, false, 0); err != nil {
		return nil, err
	}
	return &Schema{root: root, draft: c.draft}, nil
}

// Type is the root's "type" when it names one type ("" otherwise).
func (s *Schema) Type() string {
	if s.root.boolean == nil && len(s.root.types) == 1 {
		return s.root.types[0]
	}
	return ""
}

// clip cuts s to about maxShown bytes, on a character's boundary.
func clip(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func invalid(sc scope, format string, args ...any) *Error {
	return &Error{Kind: Invalid, At: sc.at(), Msg: fmt.Sprintf(format, args...)}
}

func unsupported(sc scope, format string, args ...any) *Error {
	return &Error{Kind: Unsupported, At: sc.at(), Msg: fmt.Sprintf(format, args...)}
}

// compile compiles the subschema v at sc.
func (c *compiler) compile(v any, sc scope, isRoot bool) (*node, error) {
	sc.depth++
	if sc.depth > MaxDepth {
		return nil, &Error{Kind: TooComplex, At: sc.at(), Msg: fmt.Sprintf("subschemas nest more than %d deep, this server's limit", MaxDepth)}
	}
	n := &node{at: sc.at(), minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minProperties: -1,
		maxProperties: -1, minContains: -1, maxContains: -1}
	var m map[string]any
	switch x := v.(type) {
	case bool:
		n.boolean = &x
	case map[string]any:
		m = x
	default:
		return nil, invalid(sc, "a schema is a JSON object or a boolean, not %s", describe(v))
	}
	if m != nil {
		if err := c.identify(n, m, &sc, isRoot); err != nil {
			return nil, err
		}
	}
	for i, r := range sc.res {
		r.ptrs[sc.ptrs[i]] = n
	}
	if m == nil {
		return n, nil
	}
	return n, c.keywords(n, m, sc)
}

// identify reads $schema, $id and $anchor, which may start a resource or
// name the subschema, and updates sc to say where it is.
func (c *compiler) identify(n *node, m map[string]any, sc *scope, isRoot bool) error {
	if s, ok := m["$schema"]; ok && !isRoot {
		if str, _ := s.(string); drafts[str] != c.draft || str == "" {
			return unsupported(*sc, "$schema: a subschema cannot change the draft; the schema is %s", c.draft)
		}
	}
	_, hasRef := m["$ref"]
	id, hasID := m["$id"]
	if hasID && !(c.draft == draft7 && hasRef) { // draft-07 ignores $ref's siblings
		str, ok := id.(string)
		if !ok {
			return invalid(*sc, "$id: not a string")
		}
		u, err := url.Parse(str)
		if err != nil {
			return invalid(*sc, "$id %q: not a URI reference: %v", clip(str), err)
		}
		frag := u.Fragment
		u.Fragment, u.RawFragment = "", ""
		if frag != "" && c.draft == draft2020 {
			return invalid(*sc, "$id %q: has a fragment; name a subschema with $anchor", clip(str))
		}
		if u.String() != "" || isRoot {
			abs := sc.base.ResolveReference(u)
			key := abs.String()
			if c.resources[key] != nil {
				return invalid(*sc, "$id %q: names another subschema's resource too", clip(str))
			}
			r := &resource{root: n, ptrs: map[string]*node{}, anchors: map[string]*node{}}
			c.resources[key] = r
			sc.base = abs
			// The first resource stays the whole schema's, whose
			// pointers name locations in messages; siblings share the
			// slices' arrays, so these appends copy.
			sc.res = append(slices.Clip(sc.res), r)
			sc.ptrs = append(slices.Clip(sc.ptrs), "")
		}
		if frag != "" {
			if !anchorRE.MatchString(frag) {
				return invalid(*sc, "$id %q: the fragment is not a plain name", clip(str))
			}
			if err := c.anchor(*sc, frag, n); err != nil {
				return err
			}
		}
	}
	if isRoot && len(sc.res) == 0 {
		key := sc.base.String()
		r := &resource{root: n, ptrs: map[string]*node{}, anchors: map[string]*node{}}
		c.resources[key] = r
		sc.res, sc.ptrs = []*resource{r}, []string{""}
	}
	if a, ok := m["$anchor"]; ok && c.draft == draft2020 {
		str, ok := a.(string)
		if !ok || !anchorRE.MatchString(str) {
			return invalid(*sc, "$anchor: not a plain name (a letter or _, then letters, digits, -, _ and .)")
		}
		if err := c.anchor(*sc, str, n); err != nil {
			return err
		}
	}
	return nil
}

// anchor names n in the innermost resource of sc.
func (c *compiler) anchor(sc scope, name string, n *node) error {
	r := c.innermost(sc)
	if r.anchors[name] != nil {
		return invalid(sc, "the anchor %q is defined twice", clip(name))
	}
	r.anchors[name] = n
	return nil
}

// innermost is the resource whose base sc has.
func (c *compiler) innermost(sc scope) *resource {
	if r := c.resources[sc.base.String()]; r != nil {
		return r
	}
	return sc.res[0]
}

// resolve points a $ref at its target.
func (c *compiler) resolve(p pendingRef) error {
	n := p.n
	e := &Error{At: n.at}
	u, err := url.Parse(n.ref)
	if err != nil {
		e.Kind, e.Msg = Invalid, fmt.Sprintf("$ref %q: not a URI reference: %v", clip(n.ref), err)
		return e
	}
	abs := p.base.ResolveReference(u)
	frag := abs.Fragment
	abs.Fragment, abs.RawFragment = "", ""
	r := c.resources[abs.String()]
	if r == nil {
		e.Kind, e.Msg = Unsupported, fmt.Sprintf("$ref %q points outside the schema; the Gemini API and this server follow references within it only (#/$defs/Name, #anchor)", clip(n.ref))
		return e
	}
	var t *node
	switch {
	case frag == "":
		t = r.root
	case strings.HasPrefix(frag, "/"):
		t = r.ptrs[frag]
	default:
		t = r.anchors[frag]
	}
	if t == nil {
		e.Kind, e.Msg = Invalid, fmt.Sprintf("$ref %q points at no subschema", clip(n.ref))
		return e
	}
	n.target = t
	return nil
}
