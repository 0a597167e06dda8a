package embedded

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestFindJobUsesIndex checks that FindJob reads the jobs table through
// the index of owner and resume handle: a lookup costs its row, not the
// owner's jobs.
func TestFindJobUsesIndex(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), session.Options{})
	rows, err := s.db.Query("EXPLAIN QUERY PLAN "+jobFindSQL, "tok", "interaction-1", ms(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	const want = "SEARCH jobs USING INDEX jobs_resume (owner=? AND <expr>=? AND expires_at>?)"
	if got := strings.Join(plan, "\n"); !strings.Contains(got, want) {
		t.Errorf("FindJob's plan:\n%s\nwant %q", got, want)
	}
}
