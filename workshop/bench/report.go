package main

import (
	"fmt"
	"strings"
)

// section is one measurement's part of the report.
type section struct {
	title   string
	intro   string
	table   *table
	notes   []string
	skipped string // why the section did not run
	failed  error
}

// table is a markdown table.
type table struct {
	head []string
	rows [][]string
	left map[int]bool // columns aligned left; the first always is
}

func newTable(head ...string) *table { return &table{head: head} }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// alignLeft marks text columns; numbers are right-aligned.
func (t *table) alignLeft(cols ...int) *table {
	if t.left == nil {
		t.left = map[int]bool{}
	}
	for _, c := range cols {
		t.left[c] = true
	}
	return t
}

func (t *table) markdown() string {
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	row(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---:"
		if i == 0 || t.left[i] {
			sep[i] = "---"
		}
	}
	b.WriteString("|" + strings.Join(sep, "|") + "|\n")
	for _, r := range t.rows {
		row(r)
	}
	return b.String()
}

// verdict is one of the targets against what was measured.
type verdict struct {
	goal, measured string
	// limit is what the goal is measured against in the same run (the
	// no-op go-sdk server, say), with its figure; "" for a fixed limit.
	limit string
	met   bool
	known bool // false when the section did not run
}

// report is the whole markdown document.
type report struct {
	header   []string
	sections []*section
	verdicts []verdict
	argv     *table
	notes    []string // how each server runs the CLI, from its source
}

func (r *report) markdown() string {
	var b strings.Builder
	b.WriteString("## Results\n\n")
	for _, h := range r.header {
		b.WriteString(h + "\n")
	}
	for i, s := range r.sections {
		fmt.Fprintf(&b, "\n### %d. %s\n\n", i+1, s.title)
		if s.intro != "" {
			b.WriteString(s.intro + "\n\n")
		}
		switch {
		case s.skipped != "":
			b.WriteString("| result |\n|---|\n| skipped: " + s.skipped + " |\n")
		case s.failed != nil && s.table == nil:
			b.WriteString("| result |\n|---|\n| FAILED: " + strings.ReplaceAll(oneLine(s.failed.Error()), "|", `\|`) + " |\n")
		}
		if s.table != nil {
			b.WriteString(s.table.markdown())
		}
		if s.failed != nil && s.table != nil {
			b.WriteString("\nFAILED part way: " + oneLine(s.failed.Error()) + "\n")
		}
		for _, n := range s.notes {
			b.WriteString("\n" + n + "\n")
		}
	}
	if r.argv != nil {
		b.WriteString("\n### How each server ran the CLI\n\n")
		b.WriteString("Taken from the fake CLI's invocation log during the overhead run (one call each; the prompt shown as PROMPT).\n\n")
		b.WriteString(r.argv.markdown())
		if len(r.notes) > 0 {
			b.WriteString("\nFrom each server's source:\n\n")
			for _, n := range r.notes {
				b.WriteString("- " + n + "\n")
			}
		}
	}
	if len(r.verdicts) > 0 {
		b.WriteString("\n### Targets\n\n")
		t := newTable("target", "measured", "limit, same run", "verdict").alignLeft(1, 2, 3)
		for _, v := range r.verdicts {
			verdict := "not measured"
			if v.known {
				verdict = "**missed**"
				if v.met {
					verdict = "met"
				}
			}
			limit := v.limit
			if limit == "" {
				limit = "fixed"
			}
			t.add(v.goal, v.measured, limit, verdict)
		}
		b.WriteString(t.markdown())
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.ReplaceAll(s, "\n", " ⏎ ")
}
