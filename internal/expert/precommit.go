package expert

// Precommit is the precommit expert tool.
var Precommit = &Tool{
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
}
