package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
)

// OAuthOptions make the HTTP transports an OAuth 2.1 resource server
// beside the static tokens.
type OAuthOptions struct {
	// Verify checks an access token; its TokenInfo's UserID names the
	// holder (issuer and subject).
	Verify auth.TokenVerifier
	// Resource is this server's resource URI (RFC 8707), e.g.
	// https://mcp.example.com/mcp.
	Resource string
	// Issuers are the authorization servers, as the metadata lists them.
	Issuers []string
	// Scopes are the scopes every token must hold.
	Scopes []string
	// ClockSkew is the tolerance on a token's expiry, as Verify's.
	ClockSkew time.Duration
}

// PathResourceMetadata is the path of the protected-resource metadata
// (RFC 9728).
const PathResourceMetadata = "/.well-known/oauth-protected-resource"

// MetadataURL is where the resource's metadata is: the well-known path
// inserted before the resource URI's path (RFC 9728 section 3.1).
func (o *OAuthOptions) MetadataURL() string {
	u, err := url.Parse(o.Resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + PathResourceMetadata + strings.TrimSuffix(u.EscapedPath(), "/")
}

// metadataHandler serves the resource's metadata.
func (o *OAuthOptions) metadataHandler() http.Handler {
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               o.Resource,
		AuthorizationServers:   o.Issuers,
		ScopesSupported:        o.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           Name,
	})
}

// oauthCheck returns the check of a request whose bearer token is not a
// static one: the SDK's RequireBearerToken, which verifies it, answers 401
// with the challenge that points at the metadata, and checks the scopes;
// the challenge gets the error code the SDK leaves out. next runs with the
// token's holder as the caller.
//
// A token the verifier could not check (the authorization server, its
// keys or its introspection endpoint unreachable, or answering wrong) is
// answered 503 "authorization server unavailable", with a Retry-After:
// the cause, which may name internal addresses, goes to the log only.
func (o *OAuthOptions) oauthCheck(next http.Handler, log *slog.Logger) http.Handler {
	verify := func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		info, err := o.Verify(ctx, token, r)
		if err != nil && !errors.Is(err, auth.ErrInvalidToken) && !errors.Is(err, auth.ErrOAuth) {
			log.Warn("OAuth: an access token could not be checked: the authorization server is unavailable", "err", err, "remote", r.RemoteAddr)
			if cw, ok := ctx.Value(challengeKey{}).(*challengeWriter); ok {
				cw.unavailable = true
			}
			return nil, errAuthUnavailable
		}
		return info, err
	}
	require := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: o.MetadataURL(),
		Scopes:              o.Scopes,
		ClockSkew:           o.ClockSkew,
	})
	inner := require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cw, ok := w.(*challengeWriter); ok {
			w = cw.ResponseWriter // the check is passed: its writer is done
		}
		info := auth.TokenInfoFromContext(r.Context())
		next.ServeHTTP(w, r.WithContext(identity.With(r.Context(), identity.ForToken(subjectID(info.UserID)))))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &challengeWriter{ResponseWriter: w, presented: r.Header.Get("Authorization") != ""}
		inner.ServeHTTP(cw, r.WithContext(context.WithValue(r.Context(), challengeKey{}, cw)))
	})
}

// errAuthUnavailable is all a client is told when its token could not be
// checked.
var errAuthUnavailable = errors.New("authorization server unavailable")

// authRetryAfter is the Retry-After, in seconds, of that answer.
const authRetryAfter = "5"

// challengeKey is the request context's key of its challengeWriter.
type challengeKey struct{}

// subjectID names a token's holder (its issuer and subject) as clientID
// names a static token's: a non-secret id, under a prefix of its own.
func subjectID(userID string) string {
	sum := sha256.Sum256([]byte("gemini-mcp-server subject id\x00" + userID))
	return hex.EncodeToString(sum[:8])
}

// challengeWriter adds to the SDK's WWW-Authenticate the error code of
// RFC 6750: invalid_token on a 401 for a token presented,
// insufficient_scope on a 403. Only the check's own answers pass here.
type challengeWriter struct {
	http.ResponseWriter
	presented bool
	wrote     bool
	// unavailable: the token could not be checked; the SDK's 500 for
	// that becomes a 503.
	unavailable bool
}

func (c *challengeWriter) WriteHeader(code int) {
	if !c.wrote {
		c.wrote = true
		if c.unavailable && code == http.StatusInternalServerError {
			code = http.StatusServiceUnavailable
			c.Header().Set("Retry-After", authRetryAfter)
		}
		errCode := map[int]string{http.StatusUnauthorized: "invalid_token", http.StatusForbidden: "insufficient_scope"}[code]
		if v := c.Header().Get("WWW-Authenticate"); v != "" && errCode != "" && (c.presented || code == http.StatusForbidden) {
			c.Header().Set("WWW-Authenticate", v+`, error="`+errCode+`"`)
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *challengeWriter) Write(p []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(p)
}

func (c *challengeWriter) Flush() {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(c.ResponseWriter).Flush()
}

func (c *challengeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
