package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// options is the parsed command line.
type options struct {
	model        string
	resume       string
	hasResume    bool
	sessionID    string
	hasSessionID bool
	outputFormat string
	// prompt is the value of -p/--prompt and positional the words given without a flag.
	prompt     string
	positional []string
	approval   string
	version    bool
	list       bool
	// acp is --acp (or the deprecated --experimental-acp): the long-lived Agent Client Protocol mode.
	acp        bool
	sandbox    bool
	yolo       bool
	skipTrust  bool
	includes   []string
	extensions []string
	mcpServers []string
}

// promptArg returns the prompt given on the command line: -p/--prompt, or else the positional
// words.
func (o *options) promptArg() string {
	if o.prompt != "" {
		return o.prompt
	}
	return o.positionalPrompt()
}

// positionalPrompt joins the positional words with spaces, dropping blank ones, as the real CLI
// does.
func (o *options) positionalPrompt() string {
	var words []string
	for _, w := range o.positional {
		if strings.TrimSpace(w) != "" {
			words = append(words, w)
		}
	}
	return strings.Join(words, " ")
}

// flagKind says how a flag takes its value.
type flagKind int

const (
	boolFlag   flagKind = iota // takes no value; --flag=false and --no-flag turn it off
	stringFlag                 // takes one value; the last one given wins
	listFlag                   // takes one value each time it is given
)

// flagSpec describes one flag the CLI accepts.
type flagSpec struct {
	long    string
	short   byte
	kind    flagKind
	choices []string
	// bare is the value of a flag given without one; "" makes that an error.
	bare string
	set  func(o *options, value string)
}

// flagSpecs returns the flags of gemini-cli 0.61.0 that this project uses. When noSessionID is
// true it leaves out --session-id, like the CLIs released before that flag.
func flagSpecs(noSessionID bool) []flagSpec {
	specs := []flagSpec{
		{long: "model", short: 'm', kind: stringFlag, set: func(o *options, v string) { o.model = v }},
		// A bare --resume means the latest session, as in the real CLI.
		{long: "resume", short: 'r', kind: stringFlag, bare: "latest", set: func(o *options, v string) { o.resume, o.hasResume = v, true }},
		{long: "session-id", kind: stringFlag, set: func(o *options, v string) { o.sessionID, o.hasSessionID = v, true }},
		{long: "output-format", short: 'o', kind: stringFlag, choices: []string{"text", "json", "stream-json"}, set: func(o *options, v string) { o.outputFormat = v }},
		{long: "prompt", short: 'p', kind: stringFlag, set: func(o *options, v string) { o.prompt = v }},
		{long: "list-sessions", kind: boolFlag, set: func(o *options, v string) { o.list = v == "true" }},
		{long: "approval-mode", kind: stringFlag, choices: []string{"default", "auto_edit", "yolo", "plan"}, set: func(o *options, v string) { o.approval = v }},
		{long: "sandbox", short: 's', kind: boolFlag, set: func(o *options, v string) { o.sandbox = v == "true" }},
		{long: "yolo", short: 'y', kind: boolFlag, set: func(o *options, v string) { o.yolo = v == "true" }},
		{long: "include-directories", kind: listFlag, set: func(o *options, v string) { o.includes = append(o.includes, v) }},
		{long: "extensions", short: 'e', kind: listFlag, set: func(o *options, v string) { o.extensions = append(o.extensions, v) }},
		{long: "allowed-mcp-server-names", kind: listFlag, set: func(o *options, v string) { o.mcpServers = append(o.mcpServers, v) }},
		{long: "skip-trust", kind: boolFlag, set: func(o *options, v string) { o.skipTrust = v == "true" }},
		{long: "version", short: 'v', kind: boolFlag, set: func(o *options, v string) { o.version = v == "true" }},
		{long: "acp", kind: boolFlag, set: func(o *options, v string) { o.acp = v == "true" }},
		{long: "experimental-acp", kind: boolFlag, set: func(o *options, v string) { o.acp = v == "true" }},
	}
	if noSessionID {
		specs = slices.DeleteFunc(specs, func(s flagSpec) bool { return s.long == "session-id" })
	}
	return specs
}

// parser walks the command line the way yargs does for the real CLI.
type parser struct {
	specs   []flagSpec
	args    []string
	i       int
	opts    *options
	unknown []string
}

// parseArgs parses args (os.Args[1:]). Its errors are usage errors: the real CLI prints them with
// its help text and exits 1.
func parseArgs(args []string, noSessionID bool) (*options, error) {
	p := &parser{specs: flagSpecs(noSessionID), args: args, opts: &options{outputFormat: "text"}}
	for ; p.i < len(args); p.i++ {
		arg := args[p.i]
		var err error
		switch {
		case arg == "--":
			// The real CLI drops everything after "--": measured, `gemini -- "-h x"` exits 42 with
			// "No input provided", so "--" cannot carry a prompt that starts with "-".
			p.i = len(args)
		case strings.HasPrefix(arg, "--"):
			err = p.long(arg[2:])
		case looksLikeFlag(arg):
			err = p.short(arg[1:])
		default:
			p.opts.positional = append(p.opts.positional, arg)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(p.unknown) > 0 {
		return nil, unknownError(p.unknown)
	}
	return p.opts, checkOptions(p.opts)
}

// long handles one "--name" or "--name=value" argument; body is the text after "--".
func (p *parser) long(body string) error {
	name, inline, hasInline := strings.Cut(body, "=")
	spec := p.lookupLong(name)
	if spec == nil && strings.HasPrefix(name, "no-") {
		// yargs turns --no-flag into flag=false for boolean flags.
		if s := p.lookupLong(name[3:]); s != nil && s.kind == boolFlag && !hasInline {
			s.set(p.opts, "false")
			return nil
		}
	}
	if spec == nil {
		p.addUnknown(name)
		return nil
	}
	return p.apply(spec, name, inline, hasInline)
}

// short handles one "-x", "-x=value" or "-xyz" argument; body is the text after "-". In a bundle
// such as -sy every letter is a flag, and a letter that takes a value takes the rest of the
// bundle, or the next argument when it is the last letter.
func (p *parser) short(body string) error {
	if len(body) >= 2 && body[1] == '=' {
		spec := p.lookupShort(body[0])
		if spec == nil {
			p.addUnknown(body[:1])
			return nil
		}
		return p.apply(spec, body[:1], body[2:], true)
	}
	for j := 0; j < len(body); j++ {
		spec := p.lookupShort(body[j])
		if spec == nil {
			p.addUnknown(body[j : j+1])
			continue
		}
		if spec.kind == boolFlag || j == len(body)-1 {
			if err := p.apply(spec, body[j:j+1], "", false); err != nil {
				return err
			}
			continue
		}
		return p.apply(spec, body[j:j+1], body[j+1:], true)
	}
	return nil
}

// apply stores the value of one flag, taking it from the next argument when it is not inline.
// Like yargs, it does not take a next argument that looks like a flag, which is why
// `-p "-h x"` fails while `--prompt=-h x` works.
func (p *parser) apply(spec *flagSpec, name, inline string, hasInline bool) error {
	if spec.kind == boolFlag {
		spec.set(p.opts, strconv.FormatBool(!hasInline || inline != "false"))
		return nil
	}
	value := inline
	switch {
	case hasInline:
	case p.i+1 < len(p.args) && !looksLikeFlag(p.args[p.i+1]):
		p.i++
		value = p.args[p.i]
	case spec.bare != "":
		value = spec.bare
	default:
		return usageErrorf("Not enough arguments following: %s", name)
	}
	if spec.choices != nil && !slices.Contains(spec.choices, value) {
		return usageErrorf("Invalid values:\n  Argument: %s, Given: %q, Choices: %s",
			spec.long, value, quoteAll(spec.choices))
	}
	spec.set(p.opts, value)
	return nil
}

// lookupLong finds a flag by its long name, given in kebab-case or, as yargs also accepts, in
// camelCase.
func (p *parser) lookupLong(name string) *flagSpec {
	name = kebabCase(name)
	for i := range p.specs {
		if p.specs[i].long == name {
			return &p.specs[i]
		}
	}
	return nil
}

// lookupShort finds a flag by its one-letter alias.
func (p *parser) lookupShort(c byte) *flagSpec {
	for i := range p.specs {
		if p.specs[i].short != 0 && p.specs[i].short == c {
			return &p.specs[i]
		}
	}
	return nil
}

// addUnknown records an unknown flag under the names yargs reports: as given, and in camelCase
// when that differs.
func (p *parser) addUnknown(name string) {
	p.unknown = append(p.unknown, name)
	if camel := camelCase(name); camel != name {
		p.unknown = append(p.unknown, camel)
	}
}

// checkOptions applies the real CLI's checks across flags.
func checkOptions(o *options) error {
	// Like the real CLI's check, an empty -p does not count.
	if o.prompt != "" && o.positionalPrompt() != "" {
		return usageErrorf("Cannot use both a positional prompt and the --prompt (-p) flag together")
	}
	if o.yolo && o.approval != "" {
		return usageErrorf("Cannot use both --yolo (-y) and --approval-mode together. Use --approval-mode=yolo instead.")
	}
	if o.hasResume && o.hasSessionID {
		return usageErrorf("Cannot use both --resume (-r) and --session-id together.")
	}
	return nil
}

// unknownError words unknown flags as yargs does.
func unknownError(names []string) error {
	if len(names) == 1 {
		return usageErrorf("Unknown argument: %s", names[0])
	}
	return usageErrorf("Unknown arguments: %s", strings.Join(names, ", "))
}

// looksLikeFlag reports whether arg is a flag rather than a value. A lone "-" and negative
// numbers are values, as in yargs.
func looksLikeFlag(arg string) bool {
	if len(arg) < 2 || arg[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(arg, 64)
	return err != nil
}

// kebabCase turns "sessionId" into "session-id".
func kebabCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('-')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// camelCase turns "session-id" into "sessionId".
func camelCase(s string) string {
	parts := strings.Split(s, "-")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// quoteAll formats choices as yargs lists them: "a", "b".
func quoteAll(choices []string) string {
	quoted := make([]string, len(choices))
	for i, c := range choices {
		quoted[i] = fmt.Sprintf("%q", c)
	}
	return strings.Join(quoted, ", ")
}
