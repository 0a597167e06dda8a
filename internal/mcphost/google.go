package mcphost

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// iamCredentialsURL is the IAM Credentials API, where an ID token of an
// impersonated service account is made (a variable for tests).
var iamCredentialsURL = "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/"

// googleSource is the token source of the Google providers: an access
// token of the Application Default Credentials with oauth.scopes
// (google_credentials), or an ID token of targetServiceAccount for
// targetAudience made with them (service_account_impersonation).
func googleSource(ctx context.Context, c ServerConfig) (oauth2.TokenSource, error) {
	scopes := []string{"https://www.googleapis.com/auth/cloud-platform"}
	if c.OAuth != nil && len(c.OAuth.Scopes) > 0 {
		scopes = c.OAuth.Scopes
	}
	creds, err := google.FindDefaultCredentials(ctx, scopes...)
	if err != nil {
		return nil, fmt.Errorf("%s: no Application Default Credentials (run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS): %w", c.AuthProvider, err)
	}
	if c.AuthProvider == AuthGoogleCredentials {
		return creds.TokenSource, nil
	}
	return oauth2.ReuseTokenSource(nil, &idTokenSource{creds: creds.TokenSource, account: c.TargetServiceAccount, audience: c.TargetAudience}), nil
}

// idTokenSource makes ID tokens with the IAM Credentials API's
// generateIdToken.
type idTokenSource struct {
	creds    oauth2.TokenSource
	account  string
	audience string
}

func (s *idTokenSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), oauthRequestTimeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"audience": s.audience, "includeEmail": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, iamCredentialsURL+url.PathEscape(s.account)+":generateIdToken", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := oauth2.NewClient(ctx, s.creds).Do(req)
	if err != nil {
		return nil, fmt.Errorf("generateIdToken: %w", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxOAuthBodyBytes))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("generateIdToken for %s answered %s", s.account, res.Status)
	}
	var ans struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(data, &ans); err != nil || ans.Token == "" {
		return nil, errors.New("generateIdToken gave no token")
	}
	return &oauth2.Token{AccessToken: ans.Token, TokenType: "Bearer", Expiry: jwtExpiry(ans.Token)}, nil
}

// jwtExpiry reads a JWT's exp without checking it (the token is sent on,
// not trusted here), less expiryMargin; zero when it has none.
func jwtExpiry(tok string) time.Time {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var c struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(data, &c) != nil || c.Exp == 0 {
		return time.Time{}
	}
	return time.Unix(c.Exp, 0).Add(-expiryMargin)
}
