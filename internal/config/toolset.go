package config

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultToolset is the --tools value that serves every tool.
const DefaultToolset = "all"

// toolsUsage is the help text of the --tools flag.
const toolsUsage = "the tools to serve, as each tool's definition costs the client's model context: a comma-separated list of " +
	"all (every tool), chat (chat, chat-reply, chat-page and job), sessions, expert (thinkdeep, analyze, codereview, debug and precommit) " +
	"and single tool names (e.g. expert,sessions or analyze). chat-page and job are served with chat, chat-reply and every expert tool, " +
	"as their long answers and background jobs are read with them, and with research, whose reports are read with them too; an expert tool's MCP prompt comes with its tool. --rate-limits may name only tools served"

// checkToolset reads --tools with rules.Toolset and checks that
// --rate-limits names only tools it serves; the recommended table's
// limits of tools not served are left out.
func (c *Config) checkToolset(rules Rules) error {
	if rules.Toolset == nil {
		return nil
	}
	served, err := rules.Toolset(c.Tools.Toolset)
	if err != nil {
		return fmt.Errorf("--tools: %w", err)
	}
	c.Tools.Served = served
	rl := &c.Tools.RateLimits
	// Served is some of the tools a limit may name: as many is all.
	if rl.Limits == nil || rl.tools != nil && len(served) == len(rl.tools) {
		return nil
	}
	limits, err := parseRateLimits(rl.Text, rl.tools, served)
	if err != nil {
		return err
	}
	rl.Limits = limits
	return nil
}

// notServed is the error of a rate limit on a tool --tools does not serve.
func notServed(tool string, served []string) error {
	return fmt.Errorf("--rate-limits: the tool %q is not served (see --tools): the tools served are %s", tool, strings.Join(served, ", "))
}

// keepServed drops the limits of tools not served; served nil keeps all.
func keepServed(limits map[string]Rate, served []string) map[string]Rate {
	if served == nil {
		return limits
	}
	for t := range limits {
		if !slices.Contains(served, t) {
			delete(limits, t)
		}
	}
	return limits
}
