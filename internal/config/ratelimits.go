package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Rate is how many calls of a tool one client may make per period.
type Rate struct {
	N   int
	Per time.Duration
}

func (r Rate) String() string {
	switch r.Per {
	case time.Second:
		return fmt.Sprintf("%d/s", r.N)
	case time.Minute:
		return fmt.Sprintf("%d/min", r.N)
	case time.Hour:
		return fmt.Sprintf("%d/h", r.N)
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

// RecommendedRateLimits is the expert tools' specification's table of rate
// limits per client, which --rate-limits names "recommended" (or, its
// older name, "seed").
func RecommendedRateLimits() map[string]Rate {
	return map[string]Rate{
		"chat":       {10, time.Minute},
		"analyze":    {5, time.Minute},
		"thinkdeep":  {3, time.Minute},
		"codereview": {5, time.Minute},
		"debug":      {5, time.Minute},
		"precommit":  {3, time.Minute},
	}
}

// rateLimitsUsage is the help text of the --rate-limits flag.
const rateLimitsUsage = "limit the calls each client may make of a tool: a comma-separated list of tool=N/period " +
	"(period s, min or h; e.g. chat=10/min,analyze=5/min), or \"recommended\" for the table the expert tools' specification gives " +
	"(chat 10/min, analyze 5/min, thinkdeep 3/min, codereview 5/min, debug 5/min, precommit 3/min), " +
	"which later entries override (recommended,chat=20/min; \"seed\" is an older name of the table). A client is a bearer token over HTTP, a remote address without tokens " +
	"(behind a proxy, the proxy's: every client shares it), or the one stdio client. The limits are kept in this process, or in Redis with --store redis://, shared by every replica. Default: no limits"

// ParseRateLimits reads the value of --rate-limits; "" means no limits
// (a nil map). tools are the tools a limit may name; nil allows any name.
func ParseRateLimits(s string, tools []string) (map[string]Rate, error) {
	return parseRateLimits(s, tools, nil)
}

// parseRateLimits is ParseRateLimits for a server that serves only the
// tools served (nil: every tool): a limit may name only one of them, and
// the recommended table's limits of the others are left out.
func parseRateLimits(s string, tools, served []string) (map[string]Rate, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	limits := map[string]Rate{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "recommended" || entry == "seed" {
			maps.Copy(limits, keepServed(RecommendedRateLimits(), served))
			continue
		}
		tool, rate, ok := strings.Cut(entry, "=")
		tool = strings.TrimSpace(tool)
		if !ok || tool == "" {
			return nil, fmt.Errorf("--rate-limits: %q is not tool=N/period: write e.g. analyze=5/min, or recommended", entry)
		}
		if tools != nil && !slices.Contains(tools, tool) {
			return nil, fmt.Errorf("--rate-limits: there is no tool %q: the tools are %s", tool, strings.Join(tools, ", "))
		}
		if served != nil && !slices.Contains(served, tool) {
			return nil, notServed(tool, served)
		}
		r, err := parseRate(rate)
		if err != nil {
			return nil, fmt.Errorf("--rate-limits: %s: %w", tool, err)
		}
		limits[tool] = r
	}
	return limits, nil
}

func parseRate(s string) (Rate, error) {
	n, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("%q is not N/period: write e.g. 5/min", s)
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 {
		return Rate{}, fmt.Errorf("%q: the number of calls must be a whole number of at least 1", s)
	}
	var d time.Duration
	switch strings.TrimSpace(per) {
	case "s", "sec", "second":
		d = time.Second
	case "m", "min", "minute":
		d = time.Minute
	case "h", "hour":
		d = time.Hour
	default:
		return Rate{}, fmt.Errorf("%q: the period must be s, min or h", s)
	}
	return Rate{N: count, Per: d}, nil
}

// RateLimits is --rate-limits: the text given and the limits it sets.
type RateLimits struct {
	Text   string
	Limits map[string]Rate // nil: no limits

	tools []string // the tools a limit may name (Rules.RateLimitTools)
}

// Set parses the flag's value.
func (f *RateLimits) Set(s string) error {
	l, err := ParseRateLimits(s, f.tools)
	if err != nil {
		return err
	}
	f.Text, f.Limits = s, l
	return nil
}

func (f *RateLimits) String() string {
	if f == nil {
		return ""
	}
	return f.Text
}
