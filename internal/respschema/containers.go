package respschema

import (
	"slices"
	"strconv"
	"strings"
)

// array checks the keywords of n on the array a.
func (st *state) array(n *node, a []any, p *path, anns *annotations) error {
	for i, s := range n.prefixItems {
		if i >= len(a) {
			break
		}
		if _, err := st.validate(s, a[i], p.at(i), false); err != nil {
			return err
		}
	}
	if anns != nil {
		anns.endIndex = max(anns.endIndex, min(len(n.prefixItems), len(a)))
	}
	rest := n.items
	if st.draft == draft7 && n.itemsArray {
		rest = n.additionalItems
	}
	if rest != nil {
		for i := len(n.prefixItems); i < len(a); i++ {
			if _, err := st.validate(rest, a[i], p.at(i), false); err != nil {
				if rest == n.additionalItems && rest.boolean != nil {
					return fail(p, "additionalItems", "the array has %d items; the schema allows %d", len(a), len(n.prefixItems))
				}
				if rest.boolean != nil && len(n.prefixItems) > 0 {
					return fail(p, "items", "the array has %d items; the schema allows %d", len(a), len(n.prefixItems))
				}
				return err
			}
		}
		if anns != nil {
			anns.allItems = true
		}
	}
	if n.contains != nil {
		matched := 0
		for i, e := range a {
			_, err := st.validate(n.contains, e, p.at(i), false)
			if fatal(err) {
				return err
			}
			if err == nil {
				matched++
				if anns != nil {
					if anns.indexes == nil {
						anns.indexes = map[int]bool{}
					}
					anns.indexes[i] = true
				}
			}
		}
		minC := 1
		if n.minContainsSet {
			minC = n.minContains
		}
		if matched < minC {
			if !n.minContainsSet {
				return fail(p, "contains", "no item matches %s", n.contains.at)
			}
			return fail(p, "minContains", "%d items match %s, fewer than %d", matched, n.contains.at, minC)
		}
		if n.maxContainsSet && matched > n.maxContains {
			return fail(p, "maxContains", "%d items match %s, more than %d", matched, n.contains.at, n.maxContains)
		}
	}
	if n.minItems >= 0 && len(a) < n.minItems {
		return fail(p, "minItems", "the array has %d items, fewer than %d", len(a), n.minItems)
	}
	if n.maxItems >= 0 && len(a) > n.maxItems {
		return fail(p, "maxItems", "the array has %d items, more than %d", len(a), n.maxItems)
	}
	if n.uniqueItems && len(a) > 1 {
		seen := make(map[string]int, len(a))
		var sb strings.Builder
		for i, e := range a {
			sb.Reset()
			if err := st.canonical(&sb, e); err != nil {
				return err
			}
			if j, dup := seen[sb.String()]; dup {
				return fail(p, "uniqueItems", "items %d and %d are equal", j, i)
			}
			seen[sb.String()] = i
		}
	}
	if n.unevaluatedItems != nil && !anns.allItems {
		for i := anns.endIndex; i < len(a); i++ {
			if anns.indexes[i] {
				continue
			}
			if _, err := st.validate(n.unevaluatedItems, a[i], p.at(i), false); err != nil {
				if n.unevaluatedItems.boolean != nil {
					return fail(p.at(i), "unevaluatedItems", "the item is not allowed: no subschema evaluated it")
				}
				return err
			}
		}
		anns.allItems = true
	}
	return nil
}

// object checks the keywords of n on the object o.
func (st *state) object(n *node, o map[string]any, p *path, anns *annotations) error {
	if err := st.step(len(n.properties) + len(o)); err != nil {
		return err
	}
	var keys []string
	sorted := func() []string {
		if keys == nil {
			keys = sortedKeys(o)
		}
		return keys
	}
	var evaluated map[string]bool
	if n.additionalProperties != nil || anns != nil {
		evaluated = map[string]bool{}
	}
	for _, name := range n.propertyKeys {
		e, ok := o[name]
		if !ok {
			continue
		}
		if _, err := st.validate(n.properties[name], e, p.prop(name), false); err != nil {
			return err
		}
		if evaluated != nil {
			evaluated[name] = true
		}
	}
	if len(n.patternProperties) > 0 {
		for _, name := range sorted() {
			for _, pp := range n.patternProperties {
				if err := st.step(1 + len(name)/256); err != nil {
					return err
				}
				if !pp.re.MatchString(name) {
					continue
				}
				if _, err := st.validate(pp.n, o[name], p.prop(name), false); err != nil {
					return err
				}
				if evaluated != nil {
					evaluated[name] = true
				}
			}
		}
	}
	if n.additionalProperties != nil {
		for _, name := range sorted() {
			if evaluated[name] {
				continue
			}
			if _, err := st.validate(n.additionalProperties, o[name], p.prop(name), false); err != nil {
				if n.additionalProperties.boolean != nil {
					return fail(p, "additionalProperties", "the property %s is not allowed", shown{name})
				}
				return err
			}
			evaluated[name] = true
		}
	}
	if anns != nil {
		for name := range evaluated {
			if anns.props == nil {
				anns.props = map[string]bool{}
			}
			anns.props[name] = true
		}
	}
	if n.propertyNames != nil {
		for _, name := range sorted() {
			if _, err := st.validate(n.propertyNames, name, p, false); err != nil {
				if ie, ok := invalidOf(err); ok {
					ie.prefix = "the property name " + show(name) + ": " + ie.prefix
				}
				return err
			}
		}
	}
	if n.minProperties >= 0 && len(o) < n.minProperties {
		return fail(p, "minProperties", "the object has %d properties, fewer than %d", len(o), n.minProperties)
	}
	if n.maxProperties >= 0 && len(o) > n.maxProperties {
		return fail(p, "maxProperties", "the object has %d properties, more than %d", len(o), n.maxProperties)
	}
	if err := st.step(len(n.required)); err != nil {
		return err
	}
	var missing []string
	for _, r := range n.required {
		if _, ok := o[r]; !ok {
			missing = append(missing, strconv.Quote(r))
		}
	}
	if len(missing) > 0 {
		return fail(p, "required", "missing %s", clip(strings.Join(missing, ", ")))
	}
	for _, name := range n.dependentRequiredNames {
		if _, ok := o[name]; !ok {
			continue
		}
		for _, r := range n.dependentRequired[name] {
			if _, ok := o[r]; !ok {
				return fail(p, "dependentRequired", "the property %s requires %s, which is missing", shown{name}, shown{r})
			}
		}
	}
	if n.unevaluatedProperties != nil && !anns.allProps {
		for _, name := range sorted() {
			if anns.props[name] {
				continue
			}
			if _, err := st.validate(n.unevaluatedProperties, o[name], p.prop(name), false); err != nil {
				if n.unevaluatedProperties.boolean != nil {
					return fail(p, "unevaluatedProperties", "the property %s is not allowed: no subschema evaluated it", shown{name})
				}
				return err
			}
		}
		anns.allProps = true
	}
	return nil
}

func sortedKeys(o map[string]any) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
