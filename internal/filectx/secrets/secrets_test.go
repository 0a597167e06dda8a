package secrets

import (
	"slices"
	"strings"
	"testing"
)

// The fake secrets are assembled at run time, so that this file does not
// itself hold strings that secret scanners (ours, or a code host's) take
// for real credentials.
var (
	awsKey    = "AKIA" + "Q3EGRXT5" + "7ZBWKLMN"
	awsSecret = "q8Vd2" + strings.Repeat("Kx7/Pz+3Lm", 3) + "Ab9Cd"
	ghToken   = "gh" + "p_" + strings.Repeat("a1B2c3", 6)
	ghPAT     = "github" + "_pat_" + strings.Repeat("A1b2C3d4E5", 8) + "x_"
	glToken   = "gl" + "pat-" + "Zx8Yw7Vu6Ts5Rq4Po3Nm"
	gKey      = "AI" + "za" + "SyD3x9Lk2mQw8Rt5Yu7Io1Pa4Sd6Fg0Hj2K"
	slackTok  = "xo" + "xb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp"
	slackHook = "https://hooks.slack.com/services/" + "T0A1B2C3D/B4E5F6G7H/" + "q1w2e3r4t5y6u7i8o9p0"
	stripeKey = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	jwt       = "ey" + "JhbGciOiJIUzI1NiJ9" + ".ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pemHead   = "-----BEGIN " + "RSA PRIVATE KEY-----"
)

func TestScanLine(t *testing.T) {
	cases := []struct {
		line string
		kind string // "" when nothing must be found
	}{
		{pemHead, "private-key"},
		{"-----BEGIN " + "OPENSSH PRIVATE KEY-----", "private-key"},
		{"-----BEGIN " + "PRIVATE KEY-----", "private-key"},
		{`aws_access_key_id = ` + awsKey, "aws-access-key-id"},
		{`AWS_SECRET_ACCESS_KEY="` + awsSecret + `"`, "aws-secret-access-key"},
		{`token := "` + ghToken + `"`, "github-token"},
		{ghPAT, "github-token"},
		{`GITLAB=` + glToken, "gitlab-token"},
		{`const key = "` + gKey + `";`, "google-api-key"},
		{`SLACK=` + slackTok, "slack-token"},
		{`url: ` + slackHook, "slack-token"},
		{`stripe.Key = "` + stripeKey + `"`, "stripe-key"},
		{`Authorization: Bearer ` + jwt, "jwt"},
		{`password = "hunter2hunter2"`, "password-assignment"},
		{`db_password: 'S3cure!pass'`, "password-assignment"},
		{`"client_secret": "a8f5f167f44f4964e6c998dee827110c"`, "password-assignment"},
		{"apiKey: `z9y8x7w6v5u4`", "password-assignment"},
		{`export DB_PASSWORD=s3cr3tP4ss`, "password-assignment"},
		{`GITHUB_TOKEN=abc123def456ghi`, "password-assignment"},

		// False-positive guards.
		{`aws_access_key_id = AKIAIOSFODNN7EXAMPLE`, ""},
		{`AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"`, ""},
		{`password = "changeme"`, ""},
		{`password = "your-password-here"`, ""},
		{`password: "<password>"`, ""},
		{`password = "${DB_PASSWORD}"`, ""},
		{`secret: "{{ .Values.secret }}"`, ""},
		{`password = "xxxxxxxx"`, ""},
		{`password = "********"`, ""},
		{`if password == "hunter2hunter2" {`, ""},
		{`password := os.Getenv("DB_PASSWORD")`, ""},
		{`password = get_password("label")`, ""},
		{`tokenizer = "bert-base-uncased"`, ""},
		{`secretName: "my-secret"`, ""},
		{`password = "short"`, ""},
		{`PASSWORD=$DB_PASSWORD`, ""},
		{`db_password=compute_value`, ""},
		{`// the token is read from the environment`, ""},
		{`-----BEGIN PUBLIC KEY-----`, ""},
		{`-----BEGIN CERTIFICATE-----`, ""},
		{`ghp_tooShort`, ""},
		{`const AIzaLike = "AIzaNotLongEnough"`, ""},
	}
	for _, c := range cases {
		got := ScanLine(c.line)
		if c.kind == "" {
			if len(got) != 0 {
				t.Errorf("%q: false positive %v", c.line, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Kind != c.kind {
			t.Errorf("%q: found %v, want one %s", c.line, got, c.kind)
			continue
		}
		for _, secret := range []string{awsKey, awsSecret, ghToken, ghPAT, glToken, gKey, slackTok, stripeKey, jwt, "hunter2hunter2", "S3cure!pass", "s3cr3tP4ss"} {
			if strings.Contains(got[0].Masked, secret) || (len(secret) > 12 && strings.Contains(got[0].Masked, secret[4:])) {
				t.Errorf("%q: the finding shows the secret: %q", c.line, got[0].Masked)
			}
		}
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"AKIAQ3EGRXT57ZBWKLMN": "AKIA********",
		"hunter2hunter2":       "hunt********",
		"s3cr3tP4ss":           "********",
		"abc":                  "***",
	} {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScanDiff(t *testing.T) {
	diff := strings.Join([]string{
		"diff --git a/config.py b/config.py",
		"index 1111111..2222222 100644",
		"--- a/config.py",
		"+++ b/config.py",
		"@@ -10,4 +10,5 @@ class Config:",
		"     debug = False",
		`-    password = "oldOldOld1234"`,
		`+    password = "hunter2hunter2"`,
		"     port = 8080",
		"+    key = \"" + gKey + "\"",
		"     host = 'x'",
		"diff --git a/keys/id_rsa b/keys/id_rsa",
		"new file (untracked)",
		"--- /dev/null",
		"+++ b/keys/id_rsa",
		"@@ -0,0 +1,2 @@",
		"+" + pemHead,
		"+MIIEowIBAAKCAQEA",
		"diff --git a/gone.txt b/gone.txt",
		"deleted file mode 100644",
		"--- a/gone.txt",
		"+++ /dev/null",
		"@@ -1 +0,0 @@",
		"-" + ghToken,
	}, "\n")
	got := ScanDiff(diff)
	var short []string
	for _, f := range got {
		short = append(short, f.String())
	}
	want := []string{
		`config.py:11: password-assignment (password = "hunt********)`,
		`config.py:13: google-api-key (AIza********)`,
		"keys/id_rsa:1: private-key (" + pemHead + ")",
	}
	if !slices.Equal(short, want) {
		t.Fatalf("findings\n%q\nwant\n%q", short, want)
	}
	if text := ScanText("a.env", "X=1\nAPI_TOKEN="+ghToken+"\n"); len(text) != 1 || text[0].Line != 2 || text[0].Kind != "github-token" {
		t.Fatalf("text: %v", text)
	}
}

func TestKinds(t *testing.T) {
	want := []string{"private-key", "aws-access-key-id", "aws-secret-access-key", "github-token", "gitlab-token", "google-api-key", "slack-token", "stripe-key", "jwt", "password-assignment"}
	if got := Kinds(); !slices.Equal(got, want) {
		t.Fatalf("kinds %q", got)
	}
}

// FuzzScanDiff checks that no input makes the diff reader panic and that
// every finding has a line number and a masked value.
func FuzzScanDiff(f *testing.F) {
	f.Add("+++ b/x\n@@ -1 +1 @@\n+password = \"hunter2hunter2\"\n")
	f.Add("@@ -0,0 +abc @@\n+" + ghToken)
	f.Add("+++ \"b/odd\\tname\"\n@@ -1,2 +3,4 @@\n " + "\n+" + pemHead)
	f.Fuzz(func(t *testing.T, diff string) {
		for _, fd := range ScanDiff(diff) {
			if fd.Line < 1 || fd.Kind == "" || fd.Masked == "" {
				t.Fatalf("finding %+v", fd)
			}
		}
	})
}
