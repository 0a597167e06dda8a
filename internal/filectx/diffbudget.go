package filectx

import (
	"context"
	"fmt"
	"strings"
)

// smallDiff is the size of changes sent without asking their budget:
// fewer tokens than any Gemini model takes in, a token being at least a
// byte.
const smallDiff = 32 << 10

// maxFitRounds bounds the counts made to fit a diff in its budget.
const maxFitRounds = 6

// fitDiff cuts text, precommit's diff, at a line boundary so that it is
// at most maxTokens tokens as count counts them, and returns what is
// kept, its tokens and those of the whole (0 when text was not counted:
// it fits without counting, a token being at least a byte). It counts
// the whole, then cuts in proportion and counts again, a few rounds at
// most; past them it keeps no more than maxTokens bytes.
func fitDiff(text string, maxTokens int, count func(string) (int, error)) (kept string, keptTokens, total int, err error) {
	if len(text) <= maxTokens {
		return text, 0, 0, nil
	}
	total, err = count(text)
	if err != nil || total <= maxTokens {
		return text, total, total, err
	}
	n, size := total, len(text)
	for range maxFitRounds {
		// Aim a little under the budget, so that one more round is
		// rarely needed.
		size = int(float64(size) * float64(maxTokens) / float64(n) * 0.97)
		kept = cutAtLine(text, size)
		if n, err = count(kept); err != nil {
			return "", 0, total, err
		}
		if n <= maxTokens {
			return kept, n, total, nil
		}
		size = len(kept)
	}
	kept = cutAtLine(text, maxTokens)
	n, err = count(kept)
	return kept, n, total, err
}

// cutAtLine is text cut to at most size bytes, at the end of a line.
func cutAtLine(text string, size int) string {
	if size >= len(text) {
		return text
	}
	if size < 0 {
		size = 0
	}
	cut := text[:size]
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		return cut[:i+1]
	}
	return ""
}

// diffFiles are the files whose sections ("diff --git …" lines) text
// holds, as the header names them (the b side), in order.
func diffFiles(text string) []string {
	var out []string
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, "diff --git ")
		if !ok {
			continue
		}
		rest = strings.TrimRight(rest, "\n")
		if i := strings.LastIndex(rest, " b/"); i >= 0 {
			rest = rest[i+3:]
		} else if i := strings.LastIndex(rest, ` "b/`); i >= 0 {
			rest = `"` + rest[i+4:]
		}
		out = append(out, rest)
	}
	return out
}

// budgetDiff fits cs's diff text in maxTokens() (nil or 0: no budget),
// counted as the backend counts; what was cut is said at the cut, for
// Gemini, and in cs's notes, for the caller: the file cut through, in
// Processed, and the files left out, moved to Skipped.
func (c *Service) budgetDiff(ctx context.Context, cs *ChangeSet, budget func() int) error {
	if budget == nil || len(cs.Text) <= smallDiff {
		return nil
	}
	maxTokens := budget()
	if maxTokens <= 0 {
		return nil
	}
	count := Estimate
	how := "estimated"
	if c.Count != nil {
		count = func(text string) (int, error) { return c.Count(ctx, text) }
		how = "counted"
	}
	kept, keptTokens, total, err := fitDiff(cs.Text, maxTokens, count)
	if err != nil {
		return &Error{Category: CategoryTool, Field: "path", Err: err, Message: fmt.Sprintf("counting the tokens of the changes failed: %v; try again, or review fewer changes", err)}
	}
	if len(kept) == len(cs.Text) {
		return nil
	}
	shown, all := diffFiles(kept), diffFiles(cs.Text)
	cutThrough := ""
	if len(shown) > 0 {
		cutThrough = shown[len(shown)-1]
	}
	left := all[min(len(shown), len(all)):]
	what := "the rest of the changes"
	if cutThrough != "" {
		what = "the rest of the changes to " + cutThrough
	}
	if len(left) > 0 {
		what += fmt.Sprintf(", and the changes to %d more files (%s)", len(left), listSome(left, 20))
	}
	cs.Text = kept + fmt.Sprintf("\n[the changes were cut here to fit the model's input: %d of their %d tokens (%s) are shown, %d of %d bytes; "+
		"not shown: %s. Review what is shown, and say that the rest was not reviewed.]\n", keptTokens, total, how, len(kept), len(cs.Text), what)
	if cs.Cut != "" {
		cs.Cut += "; then "
	}
	cs.Cut += fmt.Sprintf("the changes are %d tokens (%s), more than the %d the model can take in with the rest of the prompt: "+
		"only the first %d bytes of them were sent; not sent: %s", total, how, maxTokens, len(kept), what)
	notShown := map[string]bool{}
	for _, f := range left {
		notShown[f] = true
	}
	var processed []FileNote
	for _, f := range cs.Processed {
		switch {
		case notShown[f.Path] || notShown[`"`+f.Path+`"`]:
			cs.Skipped = append(cs.Skipped, FileNote{Path: f.Path, Reason: string(SkipBudget) + ": its changes were not sent, over the model's input"})
			continue
		case f.Path == cutThrough:
			f.Reason += "; cut: only the first part of its changes was sent"
		}
		processed = append(processed, f)
	}
	cs.Processed = processed
	return nil
}

// listSome joins up to n names, and says how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}
