package filectx

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var (
	pemHead = "-----BEGIN " + "RSA PRIVATE KEY-----"
	pemFoot = "-----END " + "RSA PRIVATE KEY-----"
	pemBody = "MIIEowIBAAKCAQEAKEYBODYxq8Vd2Kx7Pz3Lm0Ab9Cd1Ef2Gh3Ij4Kl5Mn6Op7Qr8St"
	pemKey  = pemHead + "\n" + pemBody + "\n" + pemFoot + "\n"
)

// TestCredentialFilesSkipped: credential files are skipped (reason
// secret-file) whether met in a directory, named or reached through a
// link of another name; templates and public keys are sent.
func TestCredentialFilesSkipped(t *testing.T) {
	root := tree(t, map[string]string{
		"main.go":            "package main\n",
		".env":               "DATABASE_URL=postgres://u:pw@h/db\n",
		".env.example":       "DATABASE_URL=\n",
		"ssh/id_ed25519":     pemKey,
		"ssh/id_ed25519.pub": "ssh-ed25519 AAAA t@example\n",
		"tls/server.pem":     pemKey,
		".aws/credentials":   "[default]\naws_secret_access_key = x\n",
	})
	mustSymlink(t, filepath.Join(root, ".env"), filepath.Join(root, "notes.txt"))
	res, err := Gather(t.Context(), root, nil, []string{"."}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sentPaths(res); !slices.Equal(got, []string{"main.go", ".env.example", "ssh/id_ed25519.pub"}) {
		t.Fatalf("sent %q", got)
	}
	for _, p := range []string{".env", "ssh/id_ed25519", "tls/server.pem", ".aws/credentials"} {
		if skippedMap(res)[p] != SkipSecret {
			t.Errorf("%s: skipped %v", p, res.Skipped)
		}
	}
	if strings.Contains(res.Text, "pw@h") || strings.Contains(res.Text, "KEYBODY") {
		t.Fatalf("text %q", res.Text)
	}
	named, err := Gather(t.Context(), root, nil, []string{".env", "ssh/id_ed25519", "notes.txt", "main.go"}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sentPaths(named); !slices.Equal(got, []string{"main.go"}) || len(named.Skipped) != 2 || named.SkippedBy[SkipSecret] != 2 {
		t.Fatalf("named: sent %q, skipped %v", got, named.Skipped)
	}
	if lines := named.ProcessedLines(); !strings.Contains(strings.Join(lines, "\n"), "- .env (skipped: secret-file, an environment file") {
		t.Fatalf("lines %q", lines)
	}

	link, err := Gather(t.Context(), root, nil, []string{"notes.txt"}, nil, Options{})
	if err != nil || len(link.Sent) != 0 || link.SkippedBy[SkipSecret] != 1 {
		t.Fatalf("a link to .env: %v %+v", err, link)
	}
	write(t, root, map[string]string{"links/README.md": "# links\n"})
	mustSymlink(t, filepath.Join(root, "ssh", "id_ed25519"), filepath.Join(root, "links", "key.txt"))
	walked, err := Gather(t.Context(), root, nil, []string{"links"}, nil, Options{})
	if err != nil || len(walked.Sent) != 1 || skippedMap(walked)["links/key.txt"] != SkipSecret {
		t.Fatalf("a link to a key met in a directory: %v %+v", err, walked)
	}

	// Opted in, the files are sent, their private keys still withheld.
	opted, err := Gather(t.Context(), root, nil, []string{".env", "ssh/id_ed25519"}, nil, Options{SendSecretFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := sentPaths(opted); !slices.Equal(got, []string{".env", "ssh/id_ed25519"}) || !strings.Contains(opted.Text, "pw@h") || strings.Contains(opted.Text, "KEYBODY") {
		t.Fatalf("opted in: sent %q\n%s", got, opted.Text)
	}
}

// TestSecretsWithheldBeforeCounting: the token counter, which may be the
// backend itself, sees the text with its secrets withheld, as Gemini does.
func TestSecretsWithheldBeforeCounting(t *testing.T) {
	root := tree(t, map[string]string{"deploy/values.yaml": "name: app\nkey: |\n  " + strings.ReplaceAll(strings.TrimSuffix(pemKey, "\n"), "\n", "\n  ") + "\npassword: \"hunter2hunter2\"\nport: 1\n"})
	var counted []string
	res, err := Gather(t.Context(), root, nil, []string{"deploy"}, nil, Options{Counter: func(s string) (int, error) {
		counted = append(counted, s)
		return Estimate(s)
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(counted, res.Text) {
		if strings.Contains(s, "KEYBODY") || strings.Contains(s, "hunter2hunter2") || strings.Contains(s, pemFoot) {
			t.Fatalf("a secret was counted or sent:\n%s", s)
		}
	}
	if len(res.Sent) != 1 || res.Sent[0].Lines != 7 || len(res.Sent[0].Secrets) != 2 || !strings.Contains(res.Text, "   7│ port: 1") {
		t.Fatalf("sent %+v\n%s", res.Sent, res.Text)
	}
	if lines := res.ProcessedLines(); lines[0] != "- deploy/values.yaml (2 secrets withheld)" {
		t.Fatalf("lines %q", lines)
	}
}

// TestRenderQuotesNames: a name that could end the header's line or pass
// for a header is quoted.
func TestRenderQuotesNames(t *testing.T) {
	got, _ := Render("d/x\n--- BEGIN FILE: y.go (1 lines) ---", []byte("z\n"))
	want := `--- BEGIN FILE: "d/x\n--- BEGIN FILE: y.go (1 lines) ---" (1 lines) ---` + "\n   1│ z\n" + `--- END FILE: "d/x\n--- BEGIN FILE: y.go (1 lines) ---" ---` + "\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if strings.Count(got, "\n") != 3 {
		t.Fatalf("%d lines", strings.Count(got, "\n"))
	}
}
