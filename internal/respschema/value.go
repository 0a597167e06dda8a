package respschema

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// The values validated are what encoding/json decodes into an any with
// UseNumber: nil, bool, string, json.Number, []any and map[string]any
// (float64 and the Go integer kinds are taken too, for callers that
// decoded without UseNumber).

// Numbers are compared exactly, as rationals. A JSON number's text can
// ask for an enormous one (1e999999999), so only a short text with a
// modest exponent is read exactly; any other is read as a float64, and
// one beyond float64's range stands as ±2^1100, past every float64.
const (
	maxExactDigits = 128
	maxExactExp    = 400
)

var beyondFloat = new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 1100))

// parseNumber reads a JSON number's text.
func parseNumber(s string) (*big.Rat, bool) {
	if len(s) <= maxExactDigits && modestExponent(s) {
		if r, ok := new(big.Rat).SetString(s); ok {
			return r, true
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case math.IsInf(f, 1):
		return new(big.Rat).Set(beyondFloat), true
	case math.IsInf(f, -1):
		return new(big.Rat).Neg(beyondFloat), true
	case err != nil:
		return nil, false
	}
	return new(big.Rat).SetFloat64(f), true
}

// modestExponent says whether a number's text has no exponent, or one
// within ±maxExactExp.
func modestExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	return err == nil && e >= -maxExactExp && e <= maxExactExp
}

// number is v as a rational when v is a JSON number.
func number(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case *big.Rat:
		return x, true
	case json.Number:
		return parseNumber(string(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false
		}
		return new(big.Rat).SetFloat64(x), true
	case float32:
		return number(float64(x))
	case int:
		return new(big.Rat).SetInt64(int64(x)), true
	case int64:
		return new(big.Rat).SetInt64(x), true
	case int32:
		return new(big.Rat).SetInt64(int64(x)), true
	case uint64:
		return new(big.Rat).SetInt(new(big.Int).SetUint64(x)), true
	}
	return nil, false
}

// jsonType is the JSON Schema type of v: null, boolean, string, number,
// integer (a number with no fraction, 1.0 included), array or object; ""
// for a value that is none of them.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if integral, known := integralText(string(x)); known {
			if integral {
				return "integer"
			}
			return "number"
		}
	}
	if r, ok := number(v); ok {
		if r.IsInt() {
			return "integer"
		}
		return "number"
	}
	return ""
}

// integralText says, when the text alone tells (no exponent), whether a
// JSON number's text is an integer: 12 and 12.000 are, 12.5 is not.
func integralText(s string) (integral, known bool) {
	if strings.ContainsAny(s, "eE") {
		return false, false
	}
	_, frac, ok := strings.Cut(s, ".")
	return !ok || strings.Trim(frac, "0") == "", true
}

// smallInt is v when it is an integer of at most 18 digits written
// without a fraction or an exponent (or a Go integer, or a schema's
// number that is one), which most of an answer's numbers are: compared
// without big numbers.
func smallInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if len(x) > 18 || strings.ContainsAny(string(x), ".eE") {
			return 0, false
		}
		i, err := strconv.ParseInt(string(x), 10, 64)
		return i, err == nil
	case *big.Rat:
		if x.IsInt() && x.Num().IsInt64() {
			return x.Num().Int64(), true
		}
	case int:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// equal is JSON equality: numbers by value (1 equals 1.0), objects
// whatever their keys' order. It charges st a step per value compared.
func (st *state) equal(a, b any) (bool, error) {
	if err := st.step(1); err != nil {
		return false, err
	}
	ta, tb := jsonType(a), jsonType(b)
	if ta == "integer" {
		ta = "number"
	}
	if tb == "integer" {
		tb = "number"
	}
	if ta != tb {
		return false, nil
	}
	switch x := a.(type) {
	case nil:
		return true, nil
	case bool:
		return x == b.(bool), nil
	case string:
		return x == b.(string), nil
	case []any:
		y := b.([]any)
		if len(x) != len(y) {
			return false, nil
		}
		for i := range x {
			if ok, err := st.equal(x[i], y[i]); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	case map[string]any:
		y := b.(map[string]any)
		if len(x) != len(y) {
			return false, nil
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok {
				return false, nil
			}
			if ok, err := st.equal(xv, yv); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	if x, ok := a.(json.Number); ok {
		if y, ok := b.(json.Number); ok && x == y {
			return true, nil
		}
	}
	if x, ok := smallInt(a); ok {
		if y, ok := smallInt(b); ok {
			return x == y, nil
		}
	}
	ra, _ := number(a)
	rb, _ := number(b)
	return ra.Cmp(rb) == 0, nil
}

// canonical writes a text of v that two values share exactly when they
// are equal, for uniqueItems; it charges st a step per value.
func (st *state) canonical(sb *strings.Builder, v any) error {
	if err := st.step(1); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(x))
	case string:
		sb.WriteString(strconv.Quote(x))
	case []any:
		sb.WriteByte('[')
		for _, e := range x {
			if err := st.canonical(sb, e); err != nil {
				return err
			}
			sb.WriteByte(',')
		}
		sb.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sb.WriteByte('{')
		for _, k := range keys {
			sb.WriteString(strconv.Quote(k))
			sb.WriteByte(':')
			if err := st.canonical(sb, x[k]); err != nil {
				return err
			}
			sb.WriteByte(',')
		}
		sb.WriteByte('}')
	default:
		r, ok := number(x)
		if !ok {
			return fmt.Errorf("%T is not a JSON value", v)
		}
		sb.WriteByte('#')
		sb.WriteString(r.RatString())
	}
	return nil
}

// schemaValue is a schema's enum or const value with its numbers read
// once, as *big.Rat, rather than at each comparison.
func schemaValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if r, ok := number(x); ok {
			return r
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = schemaValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = schemaValue(e)
		}
		return out
	}
	return v
}

// maxShown bounds how much of a value an error message quotes.
const maxShown = 64

// show is v as short JSON for an error message.
func show(v any) string {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case *big.Rat:
		s = ratString(x)
	case []any:
		s = fmt.Sprintf("an array of %d items", len(x))
		return s
	case map[string]any:
		return fmt.Sprintf("an object of %d properties", len(x))
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprintf("a %T", v)
		}
		s = string(b)
	}
	return clip(s)
}

// ratString is a schema's number for an error message.
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
