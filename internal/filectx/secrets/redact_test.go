package secrets

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

var (
	keyHead = "-----BEGIN " + "OPENSSH PRIVATE KEY-----"
	keyFoot = "-----END " + "OPENSSH PRIVATE KEY-----"
	keyBody = []string{"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", "QyNTUxOQAAACBODYONEzZ3kXq8Vd2Kx7Pz3Lm0Ab9Cd1Ef2Gh3Ij4Kl5Mn6", "AAAECBODYTWO8Vd2Kx7Pz3Lm0Ab9Cd1Ef2Gh3Ij4Kl5Mn6Op7Qr8St9Uv0Wx1Y"}
)

func noBody(t *testing.T, what, s string) {
	t.Helper()
	for _, m := range []string{"BODYONE", "BODYTWO", "b3BlbnNzaC1rZXkt"} {
		if strings.Contains(s, m) {
			t.Fatalf("%s holds the key's body (%s):\n%s", what, m, s)
		}
	}
}

func TestRedactWithholdsKeyBlocksWhole(t *testing.T) {
	for _, c := range []struct {
		name, text string
		lines      []int // the lines left as they were
	}{
		{"terminated", "a: 1\n" + keyHead + "\n" + strings.Join(keyBody, "\n") + "\n" + keyFoot + "\nb: 2\n", []int{1, 7, 8}},
		{"unterminated", "a: 1\n" + keyHead + "\n" + strings.Join(keyBody, "\n") + "\n", []int{1}},
		{"indented", "tls: |\n  " + keyHead + "\n  " + strings.Join(keyBody, "\n  ") + "\n  " + keyFoot + "\nport: 1", []int{1, 7}},
		{"one line", `{"private_key": "` + keyHead + `\n` + strings.Join(keyBody, `\n`) + `\n` + keyFoot + `\n", "x": 1}` + "\nnext: 2\n", []int{2, 3}},
		{"pgp", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + keyBody[1] + "\n-----END PGP PRIVATE KEY BLOCK-----\nafter\n", []int{5, 6}},
		{"ssh2", "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n" + keyBody[2] + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----\nafter", []int{4}},
	} {
		got, found := Redact("k", c.text)
		noBody(t, c.name, got)
		in, out := strings.Split(c.text, "\n"), strings.Split(got, "\n")
		if len(in) != len(out) {
			t.Fatalf("%s: %d lines became %d:\n%s", c.name, len(in), len(out), got)
		}
		for _, n := range c.lines {
			if in[n-1] != out[n-1] {
				t.Errorf("%s: line %d changed: %q", c.name, n, out[n-1])
			}
		}
		if len(found) != 1 || found[0].Kind != "private-key" || found[0].File != "k" {
			t.Errorf("%s: findings %v", c.name, found)
		}
	}
	text := "x = 1\npassword = \"hunter2hunter2\"\n"
	got, found := Redact("a.py", text)
	if strings.Contains(got, "hunter2hunter2") || !strings.HasPrefix(got, "x = 1\n[line withheld") || len(found) != 1 || found[0].Line != 2 {
		t.Errorf("%q %v", got, found)
	}
	if got, found := Redact("b", "plain\ntext\n"); got != "plain\ntext\n" || found != nil {
		t.Errorf("%q %v", got, found)
	}
}

func TestRedactDiff(t *testing.T) {
	diff := strings.Join([]string{
		"## Staged changes",
		"",
		"diff --git a/conf/tls.yaml b/conf/tls.yaml",
		"new file mode 100644",
		"--- /dev/null",
		"+++ b/conf/tls.yaml",
		"@@ -0,0 +1,6 @@",
		"+tls: |",
		"+  " + keyHead,
		"+  " + keyBody[0],
		"+  " + keyBody[1],
		"+  " + keyFoot,
		"+port: 1",
		"diff --git a/deploy/key.txt b/deploy/key.txt",
		"--- a/deploy/key.txt",
		"+++ b/deploy/key.txt",
		"@@ -3,4 +3,4 @@",
		" " + keyBody[0],
		"-" + keyBody[1],
		"+" + keyBody[2],
		" " + keyFoot,
		" after",
		"diff --git a/.env b/.env",
		"--- /dev/null",
		"+++ b/.env",
		"@@ -0,0 +1,2 @@",
		"+DATABASE_URL=postgres://u:pw@h/db",
		"+DEBUG=1",
		"\\ No newline at end of file",
		"diff --git a/gone.key b/gone.key",
		"--- a/gone.key",
		"+++ /dev/null",
		"@@ -1 +0,0 @@",
		"-secret",
	}, "\n")
	got, withheld := RedactDiff(diff, CredentialFile)
	noBody(t, "the diff", got)
	for _, s := range []string{"pw@h", "DEBUG=1", "-secret", "No newline"} {
		if strings.Contains(got, s) {
			t.Errorf("a withheld file's line %q was sent:\n%s", s, got)
		}
	}
	for _, s := range []string{"+tls: |", "+port: 1", " after", "+[line withheld by the server: it holds a secret: private-key", "+" + KeyLine, "+++ b/.env\n[the changes to this file are withheld"} {
		if !strings.Contains(got, s) {
			t.Errorf("the diff lacks %q:\n%s", s, got)
		}
	}
	if len(withheld) != 2 || withheld[0].Path != ".env" || withheld[1].Path != "gone.key" || !strings.Contains(withheld[0].Why, "environment") {
		t.Errorf("withheld %v", withheld)
	}
	if n, m := strings.Count(diff, "\n"), strings.Count(got, "\n"); m != n-4 {
		t.Errorf("%d lines became %d:\n%s", n+1, m+1, got)
	}
}

func TestCredentialFile(t *testing.T) {
	for _, p := range []string{".env", "app/.env.local", ".env.production", ".envrc", "deploy/prod.env", "home/.ssh/id_ed25519", "id_rsa", "ID_ECDSA_SK",
		"tls/server.pem", "server.key", "cert.p12", "a.pfx", "store.jks", "putty.ppk", ".netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc",
		".aws/credentials", "credentials.json", "client_secret_123.apps.json", "kubeconfig", "x/.kube/config", ".docker/config.json", "terraform.tfstate", "terraform.tfstate.backup"} {
		if why, ok := CredentialFile(p); !ok || why == "" {
			t.Errorf("%s is not a credential file", p)
		}
	}
	for _, p := range []string{".env.example", ".env.sample", ".env.local.template", ".env.dist", "src/env.go", "environment.ts", "id_ed25519.pub", "id_rsa.pub",
		"config", "config.json", ".kube/cache", "keys.go", "cert.crt", "known_hosts", "main.keystore.go", "docs/.envoy.yaml"} {
		if why, ok := CredentialFile(p); ok {
			t.Errorf("%s is a credential file (%s)", p, why)
		}
	}
}

// TestRedactDiffSingleLine: a line holding a secret is withheld whether
// the diff adds it or removes it.
func TestRedactDiffSingleLine(t *testing.T) {
	key := "gh" + "p_" + strings.Repeat("a1B2", 9)
	diff := "+++ b/x.go\n@@ -0,0 +1,2 @@\n+token := \"" + key + "\"\n+ok := 1\n-old := \"" + key + "\""
	got, _ := RedactDiff(diff, nil)
	if strings.Contains(got, key) || !strings.Contains(got, "-[line withheld") || !strings.Contains(got, "+[line withheld by the server: it holds a secret: github-token ghp_********]") ||
		!strings.Contains(got, "+ok := 1") {
		t.Errorf("masked:\n%s", got)
	}
}

// BenchmarkRedact10MB withholds the secrets of a 10 MB file (the largest
// file sent by default) with one secret in it: source code, and a worst
// case where every line names a token and assigns something.
func BenchmarkRedact10MB(b *testing.B) {
	for name, line := range map[string]string{
		"code":   "\tx := compute(a, b) // a line of code, as most lines are\n",
		"tokens": "\ttok := token.IDENT // the next token = lexer.Next(src)\n",
	} {
		text := strings.Repeat(line, (10<<20)/len(line)) + "password = \"hunter2hunter2\"\n"
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, found := Redact("f.go", text); len(found) != 1 {
					b.Fatalf("%d findings", len(found))
				}
			}
		})
	}
}

// TestMatchAtHintsAsUnanchored: the password assignment tried at its hints
// finds what the unanchored expression with the name characters in front
// finds, at the same places.
func TestMatchAtHintsAsUnanchored(t *testing.T) {
	var p compiled
	for _, c := range compiledPatterns() {
		if c.atHints {
			p = c
		}
	}
	whole := regexp.MustCompile(`(?i)[a-z0-9_.-]*` + strings.TrimPrefix(p.pattern.re, `(?i)^`))
	for _, line := range []string{
		`password = "hunter2hunter2"`, `db_password: 'S3cure!pass'`, `"client_secret": "a8f5f167f44f4964e6c998dee827110c"`,
		"apiKey: `z9y8x7w6v5u4`", `aws_secret_access_key = "abcdefgh12345678"`, `x.Token = "abcdefgh1234"; y.pwd := "zyxwvuts9876"`,
		`tokenizer = "bert-base-uncased"`, `tok := token.IDENT // the next token = lexer.Next(src)`, `password == "hunter2hunter2"`,
		`PASSWORD="a b c d e f g h"`, `my-api_key=>"0123456789abc"`, `secret_token: "abcdefghijkl" and access_key: "mnopqrstuvwx"`,
	} {
		want := whole.FindAllStringSubmatchIndex(line, -1)
		got := p.matchAtHints(line, asciiLower(line))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: %v, want %v", line, got, want)
		}
	}
}

// FuzzRedact checks that no text makes Redact or RedactDiff panic, that
// Redact keeps the number of lines, and that no key body line survives a
// header.
func FuzzRedact(f *testing.F) {
	f.Add(keyHead + "\n" + keyBody[0] + "\n" + keyFoot + "\nx")
	f.Add("a\n  " + keyHead + `\n` + keyFoot + "\npassword = \"hunter2hunter2\"\r\n")
	f.Add(keyHead + "\n" + keyFoot + keyHead + "\n" + keyBody[2])
	f.Add("+++ b/.env\n@@ -1 +1 @@\n " + keyBody[1] + "\n-" + keyFoot + "\n+" + keyHead)
	f.Fuzz(func(t *testing.T, text string) {
		got, _ := Redact("f", text)
		if strings.Count(got, "\n") != strings.Count(text, "\n") {
			t.Fatalf("%q became %q", text, got)
		}
		// A line that ends with a header opens a block: the next line is
		// the key's.
		in, out := strings.Split(text, "\n"), strings.Split(got, "\n")
		for i := 0; i+1 < len(in); i++ {
			if strings.HasSuffix(strings.TrimSuffix(in[i], "\r"), keyHead) && out[i+1] != KeyLine {
				t.Fatalf("line %d after a header was sent: %q", i+2, got)
			}
		}
		RedactDiff(text, CredentialFile)
	})
}
