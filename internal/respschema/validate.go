package respschema

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Validate checks v, a JSON value as encoding/json decodes it into an
// any (with UseNumber, for exact numbers), against s. Its error is an
// *InvalidError when v does not satisfy s; ErrTooLong past MaxSteps; the
// context's error when ctx ends first, which it notices within a few
// thousand steps.
func (s *Schema) Validate(ctx context.Context, v any) error {
	return s.validate(ctx, v, MaxSteps)
}

func (s *Schema) validate(ctx context.Context, v any, maxSteps int) error {
	_, err := s.run(ctx, v, maxSteps)
	return err
}

// run validates, and says how many steps it took.
func (s *Schema) run(ctx context.Context, v any, maxSteps int) (int, error) {
	st := &state{ctx: ctx, max: maxSteps, draft: s.draft}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	_, err := st.validate(s.root, v, nil, false)
	return st.steps, err
}

// checkEvery is how many steps pass between two looks at the context.
const checkEvery = 1024

// state is one validation's.
type state struct {
	ctx       context.Context
	steps     int
	max       int
	nextCheck int
	draft     draft
}

// step charges n steps, and says when the validation must stop.
func (st *state) step(n int) error {
	st.steps += n
	if st.steps > st.max {
		return ErrTooLong
	}
	if st.steps >= st.nextCheck {
		st.nextCheck = st.steps + checkEvery
		if err := st.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// path is a value's location, built only when an error names it.
type path struct {
	parent *path
	key    string
	index  int
	isKey  bool
}

func (p *path) String() string {
	var toks []string
	for ; p != nil; p = p.parent {
		if p.isKey {
			toks = append(toks, escapeToken(p.key))
		} else {
			toks = append(toks, strconv.Itoa(p.index))
		}
	}
	slices.Reverse(toks)
	if len(toks) == 0 {
		return ""
	}
	return "/" + strings.Join(toks, "/")
}

func (p *path) prop(k string) *path { return &path{parent: p, key: k, isKey: true} }
func (p *path) at(i int) *path      { return &path{parent: p, index: i} }

// annotations are what a subschema evaluated of an object or an array,
// for unevaluatedProperties and unevaluatedItems.
type annotations struct {
	props    map[string]bool
	allProps bool
	endIndex int // items before it were evaluated
	indexes  map[int]bool
	allItems bool
}

func (a *annotations) merge(b *annotations) {
	if a == nil || b == nil {
		return
	}
	if b.allProps {
		a.allProps = true
	}
	for p := range b.props {
		if a.props == nil {
			a.props = map[string]bool{}
		}
		a.props[p] = true
	}
	a.endIndex = max(a.endIndex, b.endIndex)
	for i := range b.indexes {
		if a.indexes == nil {
			a.indexes = map[int]bool{}
		}
		a.indexes[i] = true
	}
	if b.allItems {
		a.allItems = true
	}
}

// shown and ratShown render a value and a schema's number for an error
// message when it is read (see show and ratString).
type (
	shown    struct{ v any }
	ratShown struct{ r *big.Rat }
)

func (s shown) String() string    { return show(s.v) }
func (r ratShown) String() string { return ratString(r.r) }

// fail is a failure of keyword at p; its text is made from format and
// args (which show, article and the like render) only when read.
func fail(p *path, keyword, format string, args ...any) *InvalidError {
	return &InvalidError{path: p, keyword: keyword, format: format, args: args}
}

// causeList gathers the failures of an anyOf's or a oneOf's choices,
// for its error: the first maxCauses, and two levels of theirs, so that
// what a failed validation keeps stays small however the choices nest
// (a choice's own choices are kept, theirs are not).
type causeList struct {
	kept []*InvalidError
	more int
}

func (c *causeList) add(e *InvalidError) {
	if len(c.kept) == maxCauses {
		c.more++
		return
	}
	for _, g := range e.causes {
		g.causes, g.more = nil, g.more+len(g.causes)
	}
	c.kept = append(c.kept, e)
}

func (c *causeList) of(e *InvalidError) *InvalidError {
	e.causes, e.more = c.kept, c.more
	return e
}

// fatal says whether err stops the whole validation (the context, the
// step limit) rather than failing a subschema, which an anyOf, a not or
// an if may make good.
func fatal(err error) bool {
	_, invalid := invalidOf(err)
	return err != nil && !invalid
}

// invalidOf returns the failure err is, if it is one (never wrapped within
// a validation, but told by errors.As all the same).
func invalidOf(err error) (*InvalidError, bool) {
	var ie *InvalidError
	ok := errors.As(err, &ie)
	return ie, ok
}

// validate checks v at p against n. With want, it returns what n
// evaluated of v, for an unevaluatedProperties or unevaluatedItems
// above it.
func (st *state) validate(n *node, v any, p *path, want bool) (*annotations, error) {
	if err := st.step(1); err != nil {
		return nil, err
	}
	if n.boolean != nil {
		if !*n.boolean {
			return nil, fail(p, "false", "the schema allows no value here")
		}
		if want {
			return &annotations{}, nil
		}
		return nil, nil
	}
	collect := want || n.unevaluatedProperties != nil || n.unevaluatedItems != nil
	var anns *annotations
	if collect {
		anns = &annotations{}
	}
	if n.target != nil {
		a, err := st.validate(n.target, v, p, collect)
		if err != nil {
			return nil, err
		}
		anns.merge(a)
		if n.refOnly {
			return anns, nil
		}
	}
	if err := st.assertions(n, v, p); err != nil {
		return nil, err
	}
	if err := st.logic(n, v, p, anns, collect); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case []any:
		if err := st.array(n, x, p, anns); err != nil {
			return nil, err
		}
	case map[string]any:
		if err := st.object(n, x, p, anns); err != nil {
			return nil, err
		}
	}
	return anns, nil
}

// assertions checks the keywords of n that look at v alone.
func (st *state) assertions(n *node, v any, p *path) error {
	if n.typeSet {
		got := jsonType(v)
		if got == "" {
			return fail(p, "type", "%T is not a JSON value", v)
		}
		if !slices.Contains(n.types, got) && !(got == "integer" && slices.Contains(n.types, "number")) {
			if got == "integer" {
				got = "number"
			}
			return fail(p, "type", "%s is %s, not %s", shown{v}, article(got), typeList(n.types))
		}
	}
	if n.enum != nil {
		if err := st.step(len(n.enum)); err != nil {
			return err
		}
		found := false
		for _, e := range n.enum {
			ok, err := st.equal(v, e)
			if err != nil {
				return err
			}
			if ok {
				found = true
				break
			}
		}
		if !found {
			return fail(p, "enum", "%s is none of the %d values allowed", shown{v}, len(n.enum))
		}
	}
	if n.hasConst {
		ok, err := st.equal(v, n.constVal)
		if err != nil {
			return err
		}
		if !ok {
			return fail(p, "const", "%s is not the value required, %s", shown{v}, shown{n.constVal})
		}
	}
	if n.numeric {
		if r, ok := number(v); ok {
			if err := numeric(n, r, v, p); err != nil {
				return err
			}
		}
	}
	if s, ok := v.(string); ok {
		if n.minLength >= 0 || n.maxLength >= 0 {
			c := utf8.RuneCountInString(s)
			if n.minLength >= 0 && c < n.minLength {
				return fail(p, "minLength", "the string has %d characters, fewer than %d", c, n.minLength)
			}
			if n.maxLength >= 0 && c > n.maxLength {
				return fail(p, "maxLength", "the string has %d characters, more than %d", c, n.maxLength)
			}
		}
		if n.pattern != nil {
			if err := st.step(1 + len(s)/256); err != nil {
				return err
			}
			if !n.pattern.MatchString(s) {
				return fail(p, "pattern", "%s does not match %s", shown{s}, clip(n.pattern.String()))
			}
		}
	}
	return nil
}

// article and typeList render a type and a list of them for an error
// message when it is read.
type (
	article  string
	typeList []string
)

func (t article) String() string {
	switch t {
	case "null":
		return "null"
	case "array", "object", "integer":
		return "an " + string(t)
	}
	return "a " + string(t)
}

func (l typeList) String() string { return strings.Join(l, " or ") }

// numeric checks the keywords of n on the number r.
func numeric(n *node, r *big.Rat, v any, p *path) error {
	if n.multipleOfSet && !new(big.Rat).Quo(r, n.multipleOf).IsInt() {
		return fail(p, "multipleOf", "%s is not a multiple of %s", shown{v}, ratShown{n.multipleOf})
	}
	if n.minimumSet && r.Cmp(n.minimum) < 0 {
		return fail(p, "minimum", "%s is less than %s", shown{v}, ratShown{n.minimum})
	}
	if n.maximumSet && r.Cmp(n.maximum) > 0 {
		return fail(p, "maximum", "%s is greater than %s", shown{v}, ratShown{n.maximum})
	}
	if n.exclusiveMinimumSet && r.Cmp(n.exclusiveMinimum) <= 0 {
		return fail(p, "exclusiveMinimum", "%s is not greater than %s", shown{v}, ratShown{n.exclusiveMinimum})
	}
	if n.exclusiveMaximumSet && r.Cmp(n.exclusiveMaximum) >= 0 {
		return fail(p, "exclusiveMaximum", "%s is not less than %s", shown{v}, ratShown{n.exclusiveMaximum})
	}
	return nil
}

// logic checks allOf, anyOf, oneOf, not, if/then/else and the
// dependent schemas, gathering into anns (when collect) what the
// subschemas that held evaluated.
func (st *state) logic(n *node, v any, p *path, anns *annotations, collect bool) error {
	for _, s := range n.allOf {
		a, err := st.validate(s, v, p, collect)
		if err != nil {
			return err
		}
		anns.merge(a)
	}
	if n.anyOf != nil {
		var causes causeList
		matched := false
		for _, s := range n.anyOf {
			a, err := st.validate(s, v, p, collect)
			if fatal(err) {
				return err
			}
			if err != nil {
				ie, _ := invalidOf(err) // not fatal: a failure
				causes.add(ie)
				continue
			}
			matched = true
			anns.merge(a)
			if !collect {
				break // the others cannot change the outcome
			}
		}
		if !matched {
			return causes.of(fail(p, "anyOf", "matches none of the %d choices", len(n.anyOf)))
		}
	}
	if n.oneOf != nil {
		var causes causeList
		first := -1
		var firstAnns *annotations
		for i, s := range n.oneOf {
			a, err := st.validate(s, v, p, collect)
			if fatal(err) {
				return err
			}
			if err != nil {
				ie, _ := invalidOf(err) // not fatal: a failure
				causes.add(ie)
				continue
			}
			if first >= 0 {
				return fail(p, "oneOf", "matches choices %d and %d; exactly one is allowed", first, i)
			}
			first, firstAnns = i, a
		}
		if first < 0 {
			return causes.of(fail(p, "oneOf", "matches none of the %d choices", len(n.oneOf)))
		}
		anns.merge(firstAnns)
	}
	if n.not != nil {
		_, err := st.validate(n.not, v, p, false)
		if fatal(err) {
			return err
		}
		if err == nil {
			return fail(p, "not", "matches the schema it must not (%s)", n.not.at)
		}
	}
	if n.ifS != nil {
		a, err := st.validate(n.ifS, v, p, collect)
		if fatal(err) {
			return err
		}
		branch, name := n.elseS, "else"
		if err == nil {
			anns.merge(a)
			branch, name = n.thenS, "then"
		}
		if branch != nil {
			a, err := st.validate(branch, v, p, collect)
			if err != nil {
				if ie, ok := invalidOf(err); ok {
					ie.prefix = "(" + name + ") " + ie.prefix
				}
				return err
			}
			anns.merge(a)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		for _, name := range n.dependentSchemaNames {
			if _, has := obj[name]; !has {
				continue
			}
			a, err := st.validate(n.dependentSchemas[name], v, p, collect)
			if err != nil {
				return err
			}
			anns.merge(a)
		}
	}
	return nil
}
