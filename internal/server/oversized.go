package server

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// A tool call whose argument is larger than --max-prompt-bytes is refused,
// whatever the tool. The SDK would decode such a message many times over
// before any tool saw it (the JSON-RPC message, its params, the arguments
// against the tool's schema, then into the tool's input): a 5 MiB prompt
// grew the server by 50–60 MB before its refusal. So the transports
// (readBody over HTTP, the line filter on stdio) judge the arguments'
// sizes from the message as read, without decoding them, and put in place
// of each argument over the limit a short marker that says its size
// (shrinkOversized). The SDK then decodes a message of a few hundred
// bytes, and refuseOversized refuses the call from the marker, as the
// tool refuses a text over the limit (validate.TooLarge), in the tool's
// own way: an error result for the chat tools, invalid params for the
// expert tools.

// oversizedPrefix starts the marker that stands for an argument too large
// to pass on: a NUL byte, which no text argument may hold, so that
// nothing takes a marker for a text.
const oversizedPrefix = "\x00gemini-mcp-server: oversized argument of "

// oversizedMarker is the marker, as a JSON string, of an argument of n
// bytes.
func oversizedMarker(n int) []byte {
	return []byte(`"\u0000gemini-mcp-server: oversized argument of ` + strconv.Itoa(n) + ` bytes"`)
}

// oversizedSize reads a marker: the size of the argument it stands for.
func oversizedSize(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, oversizedPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, " bytes"))
	return n, err == nil && strings.HasSuffix(rest, " bytes")
}

// shrinkOversized returns body, a JSON-RPC message or batch, with each
// top-level string argument of its tools/call requests whose text is over
// limit bytes replaced by its marker, in a copy of the rest (shrunk); or
// body itself when there is none (or it is not valid JSON, which the SDK
// or the line filter refuses). It decodes nothing of the arguments: it
// counts the bytes each would decode to.
func shrinkOversized(body []byte, limit int) (out []byte, shrunk bool) {
	// A JSON string never decodes to more bytes than it takes.
	if limit <= 0 || len(body) <= limit || !json.Valid(body) {
		return body, false
	}
	s := scanner{b: body, limit: limit}
	i := s.ws(0)
	switch body[i] {
	case '{':
		s.message(i)
	case '[':
		s.elements(i, s.message)
	}
	if len(s.edits) == 0 {
		return body, false
	}
	slices.SortFunc(s.edits, func(a, b edit) int { return a.start - b.start })
	n := len(body)
	for _, e := range s.edits {
		n += len(e.repl) - (e.end - e.start)
	}
	out = make([]byte, 0, n)
	at := 0
	for _, e := range s.edits {
		out = append(append(out, body[at:e.start]...), e.repl...)
		at = e.end
	}
	return append(out, body[at:]...), true
}

// scanner walks valid JSON.
type scanner struct {
	b     []byte
	limit int
	edits []edit // in the order of the body
}

// edit replaces b[start:end] with repl.
type edit struct {
	start, end int
	repl       []byte
}

// ws skips white space from i.
func (s *scanner) ws(i int) int {
	for i < len(s.b) && (s.b[i] == ' ' || s.b[i] == '\t' || s.b[i] == '\n' || s.b[i] == '\r') {
		i++
	}
	return i
}

// end returns the end of the value that starts at i.
func (s *scanner) end(i int) int {
	switch s.b[i] {
	case '"':
		for i++; ; i++ {
			switch s.b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch s.b[i] {
			case '"':
				i = s.end(i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(s.b) && strings.IndexByte(",}] \t\r\n", s.b[i]) < 0 {
		i++
	}
	return i
}

// members calls f with the key and the bounds of the value of each member
// of the object at i.
func (s *scanner) members(i int, f func(key []byte, start, end int)) {
	i = s.ws(i + 1)
	for s.b[i] != '}' {
		k := s.end(i)
		key := s.b[i:k]
		v := s.ws(s.ws(k) + 1) // after the colon
		e := s.end(v)
		f(key, v, e)
		i = s.ws(e)
		if s.b[i] == ',' {
			i = s.ws(i + 1)
		}
	}
}

// elements calls f with the start of each element of the array at i.
func (s *scanner) elements(i int, f func(start int)) {
	i = s.ws(i + 1)
	for s.b[i] != ']' {
		f(i)
		i = s.ws(s.end(i))
		if s.b[i] == ',' {
			i = s.ws(i + 1)
		}
	}
}

// is reports whether the JSON string tok (quotes included) is name, as a
// decoder reads it; a decoder takes the last of duplicate keys, and
// matches them exactly.
func is(tok []byte, name string) bool {
	if len(tok) > 2+6*len(name) || tok[0] != '"' {
		return false
	}
	if !bytes.ContainsRune(tok, '\\') {
		return string(tok[1:len(tok)-1]) == name
	}
	var s string
	return json.Unmarshal(tok, &s) == nil && s == name
}

// message looks at the JSON-RPC message at i: a tools/call request has its
// arguments looked at.
func (s *scanner) message(i int) {
	if s.b[i] != '{' {
		return
	}
	call := false
	var params []int
	s.members(i, func(key []byte, start, _ int) {
		switch {
		case is(key, "method"):
			call = s.b[start] == '"' && is(s.b[start:s.end(start)], "tools/call")
		case is(key, "params") && s.b[start] == '{':
			params = append(params, start)
		}
	})
	if !call {
		return
	}
	for _, p := range params {
		s.members(p, func(key []byte, start, _ int) {
			if is(key, "arguments") && s.b[start] == '{' {
				s.arguments(start)
			}
		})
	}
}

// arguments replaces each string member of the arguments object at i
// whose text is over the limit with its marker.
func (s *scanner) arguments(i int) {
	s.members(i, func(_ []byte, start, end int) {
		if s.b[start] != '"' {
			return
		}
		if n := decodedLen(s.b[start:end]); n > s.limit {
			s.edits = append(s.edits, edit{start, end, oversizedMarker(n)})
		}
	})
}

// decodedLen is the length in bytes of the text of the valid JSON string
// tok (quotes included), as encoding/json decodes it: escapes as the UTF-8
// of what they stand for, an unpaired surrogate and each byte of invalid
// UTF-8 as U+FFFD.
func decodedLen(tok []byte) int {
	n := 0
	for i := 1; i < len(tok)-1; {
		c := tok[i]
		switch {
		case c == '\\' && tok[i+1] == 'u':
			r := hex4(tok[i+2:])
			i += 6
			if utf8.ValidRune(r) {
				n += utf8.RuneLen(r)
				continue
			}
			if r >= 0xD800 && r < 0xDC00 && i+6 <= len(tok)-1 && tok[i] == '\\' && tok[i+1] == 'u' {
				if lo := hex4(tok[i+2:]); lo >= 0xDC00 && lo < 0xE000 {
					n += 4
					i += 6
					continue
				}
			}
			n += 3 // U+FFFD
		case c == '\\':
			n++
			i += 2
		case c < utf8.RuneSelf:
			n++
			i++
		default:
			r, size := utf8.DecodeRune(tok[i : len(tok)-1])
			if r == utf8.RuneError && size == 1 {
				n += 3
			} else {
				n += size
			}
			i += size
		}
	}
	return n
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// refuseOversized refuses a tool call that carries the marker of an
// argument over the limit (see shrinkOversized), as the tool refuses a
// text over the limit: an error result for the chat tools, a validation
// error for the expert tools. Calls of tools the server does not have go
// on to the SDK, which says so.
func refuseOversized(f Families) mcp.Middleware {
	family := map[string]Family{}
	for _, t := range Tools {
		if f.serves(t.Name) {
			family[t.Name] = t.Family
		}
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok || !bytes.Contains(p.Arguments, []byte(`\u0000gemini-mcp-server: oversized`)) {
				return next(ctx, method, req)
			}
			name, n, ok := oversizedArg(p.Arguments)
			if !ok {
				return next(ctx, method, req)
			}
			switch family[p.Name] {
			case ChatFamily:
				if f.Chat != nil {
					return toolerr.Failure(validate.TooLarge(name, n, f.Chat.MaxPromptBytes)), nil
				}
			case ExpertFamily:
				if f.Expert != nil {
					err := validate.TooLarge(name, n, f.Expert.MaxArgBytes)
					return nil, toolerr.WireError(toolerr.ValidationErrors{{Field: name, Error: err.Error()}})
				}
			}
			return next(ctx, method, req)
		}
	}
}

// oversizedArg finds the marker of an argument over the limit among the
// arguments raw: the argument's name and size. Of several, the first
// name in order.
func oversizedArg(raw json.RawMessage) (string, int, bool) {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return "", 0, false
	}
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var s string
		if json.Unmarshal(args[name], &s) != nil {
			continue
		}
		if n, ok := oversizedSize(s); ok {
			return name, n, true
		}
	}
	return "", 0, false
}
