package respschema

import "fmt"

// expander walks a schema as a validation may, every $ref followed, to
// bound what a validation can cost and find the loops that would never
// end.
type expander struct {
	stack   []frame
	onStack map[*node]int
	count   int
	refs    int
}

type frame struct {
	n *node
	// inPlace: the edge into n applies n to the same value (a $ref, an
	// allOf …), rather than to a property or an item of it.
	inPlace bool
}

func (x *expander) tooComplex(n *node, format string, args ...any) *Error {
	return &Error{Kind: TooComplex, At: n.at, Msg: fmt.Sprintf(format, args...)}
}

func (x *expander) expand(n *node, inPlace bool, depth int) error {
	x.count++
	if x.count > MaxExpanded {
		return x.tooComplex(n, "once its $ref references are followed the schema has more than %d subschemas, this server's limit", MaxExpanded)
	}
	if depth > MaxDepth {
		return x.tooComplex(n, "once its $ref references are followed subschemas nest more than %d deep, this server's limit", MaxDepth)
	}
	x.onStack[n] = len(x.stack)
	x.stack = append(x.stack, frame{n, inPlace})
	defer func() {
		x.stack = x.stack[:len(x.stack)-1]
		delete(x.onStack, n)
	}()
	var err error
	edge := func(child *node, inPlace, isRef bool) {
		if err != nil || child == nil {
			return
		}
		if isRef {
			x.refs++
			if x.refs > MaxRefUses {
				err = x.tooComplex(n, "once its $ref references are followed the schema uses more than %d of them, this server's limit", MaxRefUses)
				return
			}
		}
		if i, ok := x.onStack[child]; ok {
			// A reference back into its own expansion: a recursive
			// type, which ends with the value, unless no step of the
			// loop goes into a property or an item.
			loop := inPlace
			for _, f := range x.stack[i+1:] {
				loop = loop && f.inPlace
			}
			if loop {
				err = &Error{Kind: Invalid, At: n.at, Msg: fmt.Sprintf("$ref %q leads back to %s without going into a property or an item: checking a value against it would never end", clip(n.ref), child.at)}
				return
			}
			x.count++
			return
		}
		err = x.expand(child, inPlace, depth+1)
	}
	if n.boolean != nil {
		return nil
	}
	edge(n.target, true, true)
	if n.refOnly {
		return err
	}
	for _, s := range n.allOf {
		edge(s, true, false)
	}
	for _, s := range n.anyOf {
		edge(s, true, false)
	}
	for _, s := range n.oneOf {
		edge(s, true, false)
	}
	edge(n.not, true, false)
	edge(n.ifS, true, false)
	edge(n.thenS, true, false)
	edge(n.elseS, true, false)
	for _, name := range n.dependentSchemaNames {
		edge(n.dependentSchemas[name], true, false)
	}
	for _, s := range n.prefixItems {
		edge(s, false, false)
	}
	edge(n.items, false, false)
	edge(n.additionalItems, false, false)
	edge(n.contains, false, false)
	for _, name := range n.propertyKeys {
		edge(n.properties[name], false, false)
	}
	for _, p := range n.patternProperties {
		edge(p.n, false, false)
	}
	edge(n.additionalProperties, false, false)
	edge(n.propertyNames, false, false)
	edge(n.unevaluatedItems, false, false)
	edge(n.unevaluatedProperties, false, false)
	return err
}
