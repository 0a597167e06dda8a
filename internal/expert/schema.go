package expert

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// prop is one argument of an expert tool, as the expert tools' specification lists it.
type prop struct {
	name     string
	kind     string // "string", "array" (of strings), "boolean" or "number"
	desc     string
	enum     []string
	def      any // the specification's default, nil when it gives none
	required bool
	// label heads the argument's text in the prompt sent to Gemini; ""
	// leaves the argument out of the prompt (tuning, files, ids).
	label string
}

// spec is one expert tool: its schema, as the specification writes it, and the
// role Gemini takes for it.
type spec struct {
	name, title, description string
	props                    []prop
	// role is the system prompt: the specification's purpose of the tool, as
	// instructions to Gemini.
	role string
	// filesArg names the argument holding files or directories ("" when
	// the tool takes none); precommit reads its changes from path instead.
	filesArg string
}

// The arguments shared by every expert tool. continuation_id is written in
// the specification for analyze and chat only; every tool takes it here, since any
// tool must be able to continue a thread another one started. temperature
// is the specification's chat argument, taken by every tool as by chat, so that the
// API backend can apply it.
func thinkingMode(def string) prop {
	return prop{name: "thinking_mode", kind: "string", enum: backend.ThinkingModes, def: def,
		desc: "How much Gemini may think before it answers. On the Gemini API backend it becomes a thinking budget or level; " +
			"the Gemini CLI backends cannot set it per call, answer without it and say so in _meta.notApplied."}
}

var (
	continuationID = prop{name: "continuation_id", kind: "string",
		desc: "Thread continuation ID for multi-turn conversations: the continuation ID of an earlier result of any of this server's tools. " +
			"Gemini then sees that conversation's history, and files already sent in it are not sent again. Omit it to start a new thread."}
	temperature = prop{name: "temperature", kind: "number",
		desc: "Optional: the sampling temperature, from 0 to 2. Omit it for the model's default. Applied by the Gemini API backend; " +
			"the Gemini CLI backends answer without it and say so in _meta.notApplied."}
	reviewType = prop{name: "review_type", kind: "string", enum: []string{"full", "security", "performance", "quick"}, def: "full",
		desc: "The kind of review: full, security, performance or quick.", label: "Review type"}
)

// specs are the five expert tools, in the specification's order.
var specs = []*spec{
	{
		name:        "thinkdeep",
		title:       "Think deeper with Gemini",
		description: "Complex architecture, system design, strategic planning: Gemini extends, challenges and deepens your current analysis.",
		role: "You are a senior engineering thought partner for complex architecture, system design and strategic planning. " +
			"Extend and challenge the analysis you are given: find what it misses, weigh the alternatives and their trade-offs, " +
			"and end with concrete, prioritised recommendations. Refer to the files you are given by path and line number.",
		filesArg: "files",
		props: []prop{
			{name: "current_analysis", kind: "string", required: true, label: "Current analysis",
				desc: "Your current thinking or analysis, for Gemini to extend and challenge."},
			{name: "problem_context", kind: "string", label: "Problem context",
				desc: "Optional: the problem, its constraints and background."},
			{name: "focus_areas", kind: "array", label: "Focus areas",
				desc: "Optional: the aspects to focus on (e.g. performance, architecture, security)."},
			thinkingMode("high"),
			{name: "files", kind: "array",
				desc: "Optional: files or directories inside the project root to give Gemini as context."},
			continuationID,
			temperature,
		},
	},
	{
		name:        "analyze",
		title:       "Analyze code with Gemini",
		description: "Code exploration and understanding: Gemini reads the given files or directories and answers your question about them.",
		role: "You are an expert software analyst. Read the code you are given and answer the question about it: " +
			"its structure, how its parts work together, and what matters for the question. " +
			"Refer to files by path and line number, and say what you could not see.",
		filesArg: "files",
		props: []prop{
			{name: "files", kind: "array", required: true, desc: "Files or directories to analyze"},
			{name: "question", kind: "string", required: true, label: "Question", desc: "What to analyze or look for"},
			{name: "analysis_type", kind: "string", enum: []string{"architecture", "performance", "security", "quality", "general"}, def: "general",
				label: "Analysis type", desc: "The kind of analysis: architecture, performance, security, quality or general."},
			thinkingMode("medium"),
			continuationID,
			temperature,
		},
	},
	{
		name:        "codereview",
		title:       "Review code with Gemini",
		description: "Code quality, security, bug detection: Gemini reviews the given files and lists issues from critical to low, with concrete fixes by line number.",
		role: "You are an expert code reviewer. Review the code you are given for bugs, security vulnerabilities, performance problems and quality. " +
			"List the issues from most to least severe (Critical, High, Medium, Low), each with its file and line numbers and a concrete fix. " +
			"Report only issues at or above the requested severity.",
		filesArg: "files",
		props: []prop{
			{name: "files", kind: "array", required: true, desc: "Files or directories to review."},
			{name: "context", kind: "string", required: true, label: "Context",
				desc: "What the code is for and what the review should know about it."},
			reviewType,
			{name: "severity_filter", kind: "string", enum: []string{"critical", "high", "medium", "all"}, def: "all",
				label: "Severity filter", desc: "The lowest severity to report: critical, high, medium or all."},
			{name: "standards", kind: "string", label: "Coding standards",
				desc: "Optional: the coding standards the code should follow."},
			thinkingMode("medium"),
			continuationID,
			temperature,
		},
	},
	{
		name:        "debug",
		title:       "Debug with Gemini",
		description: "Root cause analysis, error investigation: Gemini analyses the error, its context and the given files, and recommends fixes in order.",
		role: "You are an expert debugger. Find the root cause of the error you are given: analyse stack traces, " +
			"rank the likely causes, give the steps to reproduce and confirm each, and recommend fixes in order of priority. " +
			"Refer to files by path and line number.",
		filesArg: "files",
		props: []prop{
			{name: "error_description", kind: "string", required: true, label: "Error description",
				desc: "The error or unexpected behaviour."},
			{name: "error_context", kind: "string", label: "Error context",
				desc: "Optional: stack traces, logs, the output around the error."},
			{name: "files", kind: "array", desc: "Optional: files or directories inside the project root that relate to the error."},
			{name: "previous_attempts", kind: "string", label: "Previous attempts",
				desc: "Optional: what was tried already, and what happened."},
			{name: "runtime_info", kind: "string", label: "Runtime information",
				desc: "Optional: the environment: versions, operating system, configuration."},
			thinkingMode("medium"),
			continuationID,
			temperature,
		},
	},
	{
		name:        "precommit",
		title:       "Pre-commit check with Gemini",
		description: "Automated quality gate before a commit: Gemini reviews the staged and unstaged changes of the git repository at path, checks for secrets, and ends with a go / no-go.",
		role: "You are a meticulous pre-commit reviewer. Review the changes you are given against the stated intent: " +
			"bugs, security issues and committed secrets, missing tests, documentation that no longer matches the code. " +
			"List the issues by severity with file and line, then end with a clear verdict line: GO or NO-GO, with the reason.",
		props: []prop{
			{name: "path", kind: "string", required: true, desc: "The root of the git repository whose changes to check, inside the project root."},
			{name: "include_staged", kind: "boolean", def: true, desc: "Include the staged changes."},
			{name: "include_unstaged", kind: "boolean", def: true, desc: "Include the unstaged changes, new files included."},
			reviewType,
			{name: "original_request", kind: "string", label: "Original request",
				desc: "Optional: the user's intent, which the changes should fulfil."},
			thinkingMode("medium"),
			continuationID,
			temperature,
		},
	},
}

// specByName finds the expert tool named name.
func specByName(name string) *spec {
	for _, s := range specs {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (s *spec) prop(name string) *prop {
	for i := range s.props {
		if s.props[i].name == name {
			return &s.props[i]
		}
	}
	return nil
}

// schema is the tool's input schema. It leaves out additionalProperties
// and $schema, as chat's does (the Gemini CLI's schema sanitizer strips
// them); unknown arguments are refused by the tool itself.
func (s *spec) schema() *jsonschema.Schema {
	sc := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, p := range s.props {
		ps := &jsonschema.Schema{Type: p.kind, Description: p.desc}
		if p.kind == "array" {
			ps.Items = &jsonschema.Schema{Type: "string"}
		}
		if p.name == "temperature" {
			ps.Minimum, ps.Maximum = ptr(backend.MinTemperature), ptr(backend.MaxTemperature)
		}
		for _, e := range p.enum {
			ps.Enum = append(ps.Enum, e)
		}
		if p.def != nil {
			raw, err := json.Marshal(p.def)
			if err != nil {
				panic(err) // the defaults are this package's literals
			}
			ps.Default = raw
		}
		sc.Properties[p.name] = ps
		sc.PropertyOrder = append(sc.PropertyOrder, p.name)
		if p.required {
			sc.Required = append(sc.Required, p.name)
		}
	}
	return sc
}

// tool is the MCP tool the spec describes.
func (s *spec) tool() *mcp.Tool {
	return &mcp.Tool{
		Name: s.name,
		Description: s.description + " The result ends with ## Metadata, ## Files Processed and ## Continuation ID sections; " +
			"pass the continuation ID to any of this server's tools to continue the conversation.",
		InputSchema: s.schema(),
		Annotations: &mcp.ToolAnnotations{Title: s.title, ReadOnlyHint: true, OpenWorldHint: ptr(true)},
	}
}

func ptr[T any](v T) *T { return &v }
