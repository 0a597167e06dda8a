package embedded

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestListUsesIndexes checks that the queries of List read the sessions
// table through an index in List's order, whose equality terms are
// those of the filter: a page costs its rows, not the table.
func TestListUsesIndexes(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), session.Options{})
	for _, tc := range []struct {
		f    session.Filter
		want string
	}{
		{session.Filter{Limit: 20}, "SCAN sessions USING INDEX sessions_order"},
		{session.Filter{Offset: 40, Limit: 20, Backend: "cli", Host: "h", ByHost: true}, "SCAN sessions USING INDEX sessions_order"},
		{session.Filter{Owner: "token3", ByOwner: true, Limit: 20}, "SEARCH sessions USING INDEX sessions_owner (owner=?)"},
		{session.Filter{ByOwner: true, Limit: 20}, "SEARCH sessions USING INDEX sessions_owner (owner=?)"},
		{session.Filter{Cwd: "/x", Limit: 20}, "SEARCH sessions USING INDEX sessions_cwd (cwd=?)"},
		{session.Filter{Client: "mcp:x", Backend: "api", Limit: 1}, "SEARCH sessions USING INDEX sessions_client (last_client=?)"},
		{session.Filter{Owner: "token3", ByOwner: true, Client: "token:token3", Backend: "api", Limit: 1},
			"SEARCH sessions USING INDEX sessions_client_owner (last_client=? AND owner=?)"},
	} {
		q, args := listQuery(tc.f, 0)
		rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, step := range plan {
			if strings.Contains(step, " sessions") && step != tc.want {
				t.Errorf("List(%+v) reads the table with %q, want %q; plan:\n%s", tc.f, step, tc.want, strings.Join(plan, "\n"))
			}
		}
		if !strings.Contains(strings.Join(plan, "\n"), tc.want) {
			t.Errorf("List(%+v): plan without %q:\n%s", tc.f, tc.want, strings.Join(plan, "\n"))
		}
	}
}
