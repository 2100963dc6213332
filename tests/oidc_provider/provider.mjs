// A real OpenID provider for the sign-in tests: panva's certified oidc-provider on 127.0.0.1.
//
// Started by tests/identity/oidc.py as `node provider.mjs` with:
//   PORT            the port to listen on (the issuer is http://127.0.0.1:PORT)
//   CLIENT_ID, CLIENT_SECRET, REDIRECT_URIS, POST_LOGOUT_REDIRECT_URIS (comma-separated)
//   USERS           JSON {username: {sub, password, email, email_verified, name, groups}}
//
// The sign-in page is a plain username/password form (the interaction below); consent is
// granted at once (a first-party client). Two test-only control routes, on loopback only:
//   POST /test/users   replace the users (JSON as USERS): a group removed "upstream"
//   POST /test/tamper  {"mode": "state" | "nonce" | "expired" | "signature" | ""}: the next
//                      redirect back to the client carries a forged state ("state"), or the
//                      next token response an ID token with a wrong nonce, an expired one, or
//                      one signed by a key the provider never published (same key id).
// Every token it issues otherwise is a real, signed, verifiable one.
import http from 'node:http';
import { URLSearchParams } from 'node:url';

import * as jose from 'jose';
import Provider from 'oidc-provider';

const PORT = Number(process.env.PORT || 0);
const ISSUER = `http://127.0.0.1:${PORT}`;
const CLIENT_ID = process.env.CLIENT_ID || 'studio';
const CLIENT_SECRET = process.env.CLIENT_SECRET || 'studio-secret';
const list = (v) => (v || '').split(',').map((s) => s.trim()).filter(Boolean);
let users = JSON.parse(process.env.USERS || '{}');
let tamperMode = '';

const KID = 'test-key-1';
const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const { privateKey: strangerKey } = await jose.generateKeyPair('RS256', { extractable: true });
const privateJwk = { ...(await jose.exportJWK(privateKey)), kid: KID, alg: 'RS256', use: 'sig' };

function userBySub(sub) {
  for (const [username, user] of Object.entries(users)) {
    if (user.sub === sub) return [username, user];
  }
  return [null, null];
}

const provider = new Provider(ISSUER, {
  clients: [
    {
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: list(process.env.REDIRECT_URIS),
      post_logout_redirect_uris: list(process.env.POST_LOGOUT_REDIRECT_URIS),
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [privateJwk] },
  cookies: { keys: ['test-provider-cookie-key'] },
  // PKCE for every client: the studio must send a code challenge.
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: { enabled: true },
  },
  async findAccount(ctx, sub) {
    const [username, user] = userBySub(sub);
    if (!user) return undefined;
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          preferred_username: username,
          name: user.name || username,
          email: user.email,
          email_verified: Boolean(user.email_verified),
          groups: user.groups || [],
        };
      },
    };
  },
});

// After the authorization endpoint answered: a tampered `state` on the way back to the
// client (mode "state"), as a forged or altered sign-in link would carry.
provider.use(async (ctx, next) => {
  await next();
  const location = ctx.response.get('location') || '';
  if (tamperMode !== 'state' || !/[?&]state=/.test(location) || !/[?&]code=/.test(location)) return;
  tamperMode = '';
  ctx.response.set('location', location.replace(/([?&]state=)[^&]+/, '$1forged-state'));
});

// After the token endpoint answered: spoil the next ID token if a test asked for it.
provider.use(async (ctx, next) => {
  await next();
  if (!tamperMode || tamperMode === 'state' || ctx.path !== '/token' || !ctx.body || !ctx.body.id_token) return;
  const mode = tamperMode;
  tamperMode = '';
  const claims = jose.decodeJwt(ctx.body.id_token);
  const now = Math.floor(Date.now() / 1000);
  let key = privateKey;
  if (mode === 'nonce') claims.nonce = 'a-nonce-this-sign-in-never-sent';
  if (mode === 'expired') Object.assign(claims, { iat: now - 7200, exp: now - 3600 });
  if (mode === 'signature') key = strangerKey;
  ctx.body = {
    ...ctx.body,
    id_token: await new jose.SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: KID, typ: 'JWT' })
      .sign(key),
  };
});

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function loginPage(uid, error) {
  return `<!doctype html><html><head><title>Test provider sign-in</title></head><body>
<h1>Test identity provider</h1>
${error ? `<p role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<label>Provider username <input name="username" autocomplete="username"></label>
<label>Provider password <input name="password" type="password"></label>
<button type="submit">Continue to the studio</button>
</form></body></html>`;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function interaction(req, res) {
  const url = new URL(req.url, ISSUER);
  const details = await provider.interactionDetails(req, res);
  const { uid, prompt, params, session } = details;
  if (req.method === 'POST' && url.pathname.endsWith('/login')) {
    const form = new URLSearchParams(await readBody(req));
    const user = users[form.get('username') || ''];
    if (!user || user.password !== form.get('password')) {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(loginPage(uid, 'Wrong username or password.'));
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId: user.sub } }, {
      mergeWithLastSubmission: false,
    });
    return;
  }
  if (prompt.name === 'login') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(loginPage(uid, ''));
    return;
  }
  // Consent: a first-party client gets what it asked for.
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, {
    mergeWithLastSubmission: true,
  });
}

async function control(req, res) {
  const body = JSON.parse((await readBody(req)) || '{}');
  if (req.url === '/test/users') users = body;
  else if (req.url === '/test/tamper') tamperMode = body.mode || '';
  else {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(204);
  res.end();
}

const callback = provider.callback();
const server = http.createServer((req, res) => {
  const handle = req.url.startsWith('/interaction/')
    ? interaction
    : req.url.startsWith('/test/') && req.method === 'POST'
      ? control
      : callback;
  Promise.resolve(handle(req, res)).catch((err) => {
    console.error(err);
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(String(err && err.message));
  });
});
server.listen(PORT, '127.0.0.1', () => console.log(`oidc-provider listening on ${ISSUER}`));
