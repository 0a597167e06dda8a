package session

import (
	"slices"
	"testing"
)

func TestPagedAnswerFit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		pages       []string
		budget      int
		wantPages   []string
		wantBytes   int
		wantDropped int
	}{
		{"within", []string{"aa", "bbb"}, 5, []string{"aa", "bbb"}, 5, 0},
		{"cut at a page", []string{"aa", "bbb", "c"}, 4, []string{"aa"}, 2, 4},
		{"first page alone is too big", []string{"aaaaaa", "b"}, 3, []string{"aaaaaa"}, 6, 1},
		{"none", nil, 3, []string{}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, n := PagedAnswer{ID: "x", Pages: c.pages, Dropped: 1}.Fit(c.budget)
			if !slices.Equal(a.Pages, c.wantPages) || n != c.wantBytes || a.Dropped != 1+c.wantDropped || a.ID != "x" {
				t.Errorf("Fit(%d) of %q = %q, %d bytes, dropped %d; want %q, %d bytes, dropped %d",
					c.budget, c.pages, a.Pages, n, a.Dropped, c.wantPages, c.wantBytes, 1+c.wantDropped)
			}
			if cap(a.Pages) != len(a.Pages) {
				t.Errorf("the pages kept have room to append into the caller's array: len %d, cap %d", len(a.Pages), cap(a.Pages))
			}
		})
	}
}
