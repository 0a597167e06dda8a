package mcphost

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
)

// adc sets Application Default Credentials: a service account whose
// token endpoint is a local server that trades its signed assertion for
// the access token adc-access-token. (With GOOGLE_APPLICATION_CREDENTIALS
// set, no other source, such as the metadata server, is tried.)
func adc(t *testing.T) {
	t.Helper()
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || r.Form.Get("assertion") == "" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"adc-access-token","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(tokens.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	data, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": "k1", "private_key": string(pemKey),
		"client_email": "caller@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokens.URL + "/token",
	})
	path := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
}

func TestGoogleCredentials(t *testing.T) {
	adc(t)
	cfg := ServerConfig{Name: "g", HTTPURL: "https://x.googleapis.com/mcp", AuthProvider: AuthGoogleCredentials, OAuth: &OAuthConfig{Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}}}
	src, err := googleSource(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := newServerAuth(cfg, &MemoryTokens{}, redact.New(), nil)
	a.source = src
	tok, err := a.current(context.Background())
	if err != nil || tok != "adc-access-token" {
		t.Fatalf("current: %q %v", tok, err)
	}
	if strings.Contains(a.red.String("adc-access-token"), "adc-access-token") {
		t.Error("the ADC token is not masked")
	}
}

func TestServiceAccountImpersonation(t *testing.T) {
	adc(t)
	exp := time.Now().Add(time.Hour).Unix()
	idToken := "e30." + base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"exp":%d}`, exp)) + ".sig"
	iam := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Audience     string `json:"audience"`
			IncludeEmail bool   `json:"includeEmail"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		if r.Header.Get("Authorization") != "Bearer adc-access-token" || r.URL.Path != "/target@p.iam.gserviceaccount.com:generateIdToken" || body.Audience != "the-audience" || !body.IncludeEmail {
			http.Error(w, "bad request", http.StatusForbidden)
			return
		}
		fmt.Fprintf(w, `{"token":%q}`, idToken)
	}))
	defer iam.Close()
	old := iamCredentialsURL
	iamCredentialsURL = iam.URL + "/"
	defer func() { iamCredentialsURL = old }()
	cfg := ServerConfig{Name: "sa", HTTPURL: "https://run.example.test/mcp", AuthProvider: AuthServiceAccountImpersonation, TargetAudience: "the-audience", TargetServiceAccount: "target@p.iam.gserviceaccount.com"}
	src, err := googleSource(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := src.Token()
	if err != nil || tok.AccessToken != idToken {
		t.Fatalf("token: %+v %v", tok, err)
	}
	if d := time.Until(tok.Expiry); d > time.Hour || d < 55*time.Minute {
		t.Errorf("expiry in %v, want the ID token's exp less a minute", d)
	}
}

func TestGoogleWithoutCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "none.json"))
	t.Setenv("HOME", t.TempDir())
	cfg := ServerConfig{Name: "g", HTTPURL: "https://x.googleapis.com/mcp", AuthProvider: AuthGoogleCredentials, OAuth: &OAuthConfig{Scopes: []string{"s"}}}
	if _, err := googleSource(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no Application Default Credentials") {
		t.Errorf("error %v", err)
	}
}
