// Package respschema checks the JSON Schema a caller gives for a
// structured answer (chat's response_schema) before any call, and
// validates the answer against it afterwards, within bounds.
//
// Compile refuses, with the schema location at fault:
//   - what the JSON Schema meta-schema (draft 2020-12, or draft-07 when
//     $schema says so) does not allow: a "type" that is not a JSON
//     Schema type ("numbr"), a "required" that is not a list of distinct
//     strings, a negative "minItems", a "pattern" that is not a regular
//     expression, a subschema that is neither an object nor a boolean;
//   - what the Gemini API and this server do not take: a reference
//     outside the schema, $dynamicRef and $recursiveRef, a $schema other
//     than draft 2020-12 and draft-07, and the keywords of the other
//     draft, which would otherwise be ignored without a word;
//   - a schema whose checking could not end, or would cost more than the
//     limits below: a $ref loop that never goes into a property or an
//     item (checking a value against it would never end), and a schema
//     that grows past MaxExpanded subschemas, MaxDepth levels or
//     MaxRefUses references once every $ref is followed (forty levels of
//     anyOf of two references to the next level are 2^40 subschemas in
//     2.6 KB).
//
// Validate checks a value against a compiled schema, as the JSON Schema
// specification says (annotations included, for unevaluatedProperties
// and unevaluatedItems; format is an annotation only); it counts its
// steps, stops past MaxSteps, and stops when its context ends. It is
// this package's own, rather than github.com/google/jsonschema-go's,
// because that one can be neither bounded nor stopped: its validation
// of the schema above runs on for hours, and a $ref loop overflows the
// stack, which ends the process.
package respschema

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// The limits on a schema and on its checking.
const (
	// MaxExpanded bounds the subschemas a schema has once every $ref is
	// replaced by what it points to (a reference back into its own
	// expansion, a recursive type, counts once): what checking one
	// value may apply to it.
	MaxExpanded = 10_000
	// MaxDepth bounds how deeply subschemas nest, in the schema as
	// written and once its references are followed.
	MaxDepth = 128
	// MaxRefUses bounds the $ref references followed in the expansion.
	MaxRefUses = 2_000
	// MaxSteps bounds the steps of one validation: a subschema applied
	// to a value, a value compared or copied. An answer of a few
	// hundred kilobytes against a schema within the limits above takes
	// far fewer.
	MaxSteps = 4_000_000
)

// Kind tells the errors of Compile apart.
type Kind int

const (
	// Invalid is a schema that is not JSON Schema, as its meta-schema
	// says.
	Invalid Kind = iota + 1
	// Unsupported is JSON Schema that the Gemini API or this server does
	// not take.
	Unsupported
	// TooComplex is a schema past this package's limits.
	TooComplex
)

// Error is a schema that Compile refuses: what is wrong and where.
type Error struct {
	Kind Kind
	// At is the schema location at fault, as a URI fragment ("#",
	// "#/properties/age").
	At  string
	Msg string
}

func (e *Error) Error() string { return "at " + e.At + ": " + e.Msg }

// ErrTooLong is the error of a validation that took more than MaxSteps.
var ErrTooLong = fmt.Errorf("checking the answer took more than %d steps, this server's limit", MaxSteps)

// InvalidError is a value that does not satisfy a schema: where, the
// keyword that failed, and how. Its text is made only when asked for, so
// that the choices an anyOf tries and drops cost no formatting.
type InvalidError struct {
	path    *path
	keyword string
	format  string
	args    []any
	// causes are the failures of an anyOf's or a oneOf's choices (the
	// first maxCauses), more how many more there were.
	causes []*InvalidError
	more   int
	// prefix, when set, goes before the message ("(then) ").
	prefix string
}

// maxCauses and maxCauseText bound the error text of an anyOf or a
// oneOf that matched none of its choices.
const (
	maxCauses    = 8
	maxCauseText = 300
	// maxPathText bounds the location an error names.
	maxPathText = 400
)

// At is the value's location in the whole, a JSON pointer ("" for the
// whole value, "/items/0/name").
func (e *InvalidError) At() string { return e.path.String() }

// Keyword is the schema keyword that failed ("minimum").
func (e *InvalidError) Keyword() string { return e.keyword }

func (e *InvalidError) Error() string {
	at := "at the top level"
	if p := e.path.String(); p != "" {
		if len(p) > maxPathText {
			// A deep value: its start and its end say where.
			head, tail := maxPathText/2, len(p)-maxPathText/2
			for head > 0 && !utf8.RuneStart(p[head]) {
				head--
			}
			for tail < len(p) && !utf8.RuneStart(p[tail]) {
				tail++
			}
			p = p[:head] + "…" + p[tail:]
		}
		at = "at " + p
	}
	s := at + ": " + e.keyword + ": " + e.prefix + fmt.Sprintf(e.format, e.args...)
	for i, c := range e.causes {
		t := c.Error()
		if len(t) > maxCauseText {
			cut := maxCauseText
			for cut > 0 && !utf8.RuneStart(t[cut]) {
				cut--
			}
			t = t[:cut] + "…"
		}
		s += fmt.Sprintf("; choice %d: %s", i, t)
	}
	if e.more > 0 {
		s += fmt.Sprintf("; and %d more", e.more)
	}
	return s
}

// IsInvalid says whether err is a value that does not satisfy the schema
// (rather than a validation stopped by its context or its step limit).
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}
