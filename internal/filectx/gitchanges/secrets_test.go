package gitchanges

import (
	"slices"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx/secrets"
)

// TestPlantedSecretsAreFound runs the secret patterns over the changes of
// a real repository: a staged change, an unstaged one and a new file, each
// with a planted fake secret, and a removed one that is not reported.
func TestPlantedSecretsAreFound(t *testing.T) {
	key := "AKIA" + "Q3EGRXT5" + "7ZBWKLMN"
	dir := repo(t, map[string]string{"app.py": "import os\n\nDEBUG = False\n", "old.py": "token = \"" + "glpat-" + "Zx8Yw7Vu6Ts5Rq4Po3Nm\"\n"})
	writeFiles(t, dir, map[string]string{"app.py": "import os\n\nDEBUG = False\npassword = \"hunter2hunter2\"\n"})
	git(t, dir, "add", "app.py")
	writeFiles(t, dir, map[string]string{
		"app.py":     "import os\n\nDEBUG = False\npassword = \"hunter2hunter2\"\nkey_id = \"" + key + "\"\n",
		"deploy.env": "HOST=example.org\nexport API_TOKEN=s3cr3tvalue99\n",
		"old.py":     "token = os.environ[\"TOKEN\"]\n",
	})
	c, err := Collect(t.Context(), dir, Options{Staged: true, Unstaged: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range secrets.ScanDiff(c.Diff()) {
		got = append(got, f.String())
	}
	want := []string{
		`app.py:4: password-assignment (password = "hunt********)`,
		`app.py:5: aws-access-key-id (AKIA********)`,
		`deploy.env:2: password-assignment (export API_TOKEN=s3cr********)`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings\n%q\nwant\n%q\ndiff:\n%s", got, want, c.Diff())
	}
}
