package filectx

import (
	"context"
	"strings"
	"testing"
)

// TestBudgetDiffCutsAndSaysWhat: changes over the budget are cut at a
// line, within the budget as counted, and the cut says which file was cut
// through and which were left out, in the text and in the notes.
func TestBudgetDiffCutsAndSaysWhat(t *testing.T) {
	t.Parallel()
	words := func(_ context.Context, s string) (int, error) { return len(strings.Fields(s)), nil }
	section := func(name string, lines int) string {
		return "diff --git a/" + name + " b/" + name + "\n" + strings.Repeat("+a a a a a a a a a\n", lines)
	}
	text := section("one.go", 10) + section("two.go", 3000) + section("three.go", 10)
	cs := &ChangeSet{Text: text, Processed: []FileNote{{Path: "one.go", Reason: "modified"}, {Path: "two.go", Reason: "modified"}, {Path: "three.go", Reason: "added"}}}
	c := &Service{Count: words}
	if err := c.budgetDiff(context.Background(), cs, func() int { return 20000 }); err != nil {
		t.Fatal(err)
	}
	kept, _, _ := strings.Cut(cs.Text, "\n[the changes were cut here")
	if n, _ := words(nil, kept); n > 20000 || n < 17000 || !strings.HasSuffix(kept, "\n") {
		t.Errorf("kept %d tokens (%d bytes)", n, len(kept))
	}
	if !strings.Contains(cs.Text, "not shown: the rest of the changes to two.go, and the changes to 1 more files (three.go)") {
		t.Errorf("the note: %s", cs.Text[len(kept):])
	}
	if len(cs.Processed) != 2 || cs.Processed[1].Reason != "modified; cut: only the first part of its changes was sent" ||
		len(cs.Skipped) != 1 || cs.Skipped[0].Path != "three.go" || !strings.Contains(cs.Cut, "three.go") {
		t.Errorf("processed %v skipped %v cut %q", cs.Processed, cs.Skipped, cs.Cut)
	}
	whole := &ChangeSet{Text: section("one.go", 10)}
	if err := c.budgetDiff(context.Background(), whole, func() int { return 20000 }); err != nil || whole.Cut != "" || whole.Text != section("one.go", 10) {
		t.Errorf("changes within the budget were changed: %q %v", whole.Cut, err)
	}
}
