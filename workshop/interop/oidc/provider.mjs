// A real OpenID provider (npm oidc-provider, pinned in ../npm) for the
// tests of gemini-mcp-server as an OAuth resource server. It listens on
// 127.0.0.1 (a random port), prints {"issuer": URL} on one line once it
// serves, and issues JWT access tokens through the client credentials
// grant, for the resource (RFC 8707) the request names:
//
//   clients "mcp-test" and "mcp-other" (two subjects), secrets
//   "<client>-secret-0123456789", scopes gemini and other.
//
// For the MCP host's sign-in it also takes dynamic client registration
// (RFC 7591; off with OIDC_REGISTRATION=off) and the authorization code flow, in which the user
// "user-1" is signed in and consents at once (a browser that follows the
// redirects completes it), with refresh tokens for clients that may use
// them, and token revocation (RFC 7009).
//
// Test routes, outside the provider's own, drive what a provider does
// over time:
//
//   POST /test/rotate  replaces the signing key (a new kid); JWKS serves the new one
//   POST /test/sign    signs the JSON claims of its body with the current key,
//                      for tokens no real flow gives (expired ones)
//   POST /test/ttl     {"ttl": seconds}: the lifetime of access tokens issued from now
//
// Opaque tokens and introspection (RFC 7662): the provider's introspection
// and revocation endpoints are on; client "mcp-introspector" (secret
// "mcp-introspector-secret-0123456789") may introspect; a client
// credentials token carries its client as sub (as the provider's JWTs do);
// and the tokens for a resource are opaque once it is named by
//
//   POST /test/format  {"resource": URL, "format": "opaque" | "jwt"}
//
// It exits when its stdin closes, so it never outlives the test.
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Provider = require('oidc-provider').default ?? require('oidc-provider');
const jose = require('jose');

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

// Opaque tokens and introspection: the resources whose tokens are opaque,
// the client that introspects, the provider's features and the sub of a
// client credentials token.
const opaqueResources = new Set();
const introspector = {
  client_id: 'mcp-introspector',
  client_secret: 'mcp-introspector-secret-0123456789',
  grant_types: [],
  redirect_uris: [],
  response_types: [],
};
const introspection = {
  introspection: { enabled: true },
  revocation: { enabled: true },
};
const extraTokenClaims = async (ctx, token) => (token.kind === 'ClientCredentials' ? { sub: token.clientId } : undefined);

let key; // the current private JWK
let provider;
let generation = 0;
let accessTTL = 600;

async function newKey() {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  generation += 1;
  jwk.kid = `key-${generation}-${Date.now()}`;
  jwk.alg = 'RS256';
  jwk.use = 'sig';
  return jwk;
}

function newProvider() {
  const p = new Provider(issuer, {
    clients: ['mcp-test', 'mcp-other'].map((id) => ({
      client_id: id,
      client_secret: `${id}-secret-0123456789`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: 'gemini other',
    })).concat([introspector]),
    extraTokenClaims,
    scopes: ['gemini', 'other'],
    jwks: { keys: [key] },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    ttl: { RefreshToken: 3600, Grant: 3600, Session: 3600, Interaction: 600, AuthorizationCode: 60 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      ...introspection,
      registration: { enabled: process.env.OIDC_REGISTRATION !== 'off' },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: (ctx, resource) => ({
          scope: 'gemini other',
          audience: resource,
          accessTokenTTL: accessTTL,
          accessTokenFormat: opaqueResources.has(resource) ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
  p.on('server_error', (ctx, err) => console.error('server_error', err));
  return p;
}

key = await newKey();
provider = newProvider();

function body(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { data += c; if (data.length > 1 << 16) req.destroy(); });
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}

// interact signs "user-1" in and grants what the client asked for, with
// no page: the authorization request's browser is redirected on at once.
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: 'user-1' } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

server.on('request', async (req, res) => {
  try {
    if (req.method === 'GET' && req.url.startsWith('/interaction/')) {
      await interact(req, res);
      return;
    }
    if (req.method === 'POST' && req.url === '/test/ttl') {
      accessTTL = JSON.parse(await body(req)).ttl;
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ ttl: accessTTL }));
      return;
    }
    if (req.method === 'POST' && req.url === '/test/rotate') {
      key = await newKey();
      provider = newProvider();
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ kid: key.kid }));
      return;
    }
    if (req.method === 'POST' && req.url === '/test/format') {
      const { resource, format } = JSON.parse(await body(req));
      if (format === 'opaque') opaqueResources.add(resource); else opaqueResources.delete(resource);
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ resource, format }));
      return;
    }
    if (req.method === 'POST' && req.url === '/test/sign') {
      const claims = JSON.parse(await body(req));
      const priv = await jose.importJWK(key, 'RS256');
      const token = await new jose.SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' })
        .sign(priv);
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ token }));
      return;
    }
    provider.callback()(req, res);
  } catch (err) {
    console.error(err);
    res.statusCode = 500;
    res.end(String(err));
  }
});

process.stdout.write(JSON.stringify({ issuer }) + '\n');
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
