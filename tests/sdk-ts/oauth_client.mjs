// Interop check: the official TypeScript MCP SDKs sign in to studioflow's own authorization server
// (`serve --oauth-server`) with no token to start from: `@modelcontextprotocol/sdk` 1.32 (SDK "1")
// and `@modelcontextprotocol/client` 2.4 (SDK "2").
//
// Usage: OAUTH_USER=alice OAUTH_PASSWORD=... node oauth_client.mjs 1|2 flow|stepup http://127.0.0.1:PORT/mcp
//
// The transport gets 401, discovers the metadata, registers, and calls the provider's
// redirectToAuthorization with the authorization URL: the "browser" here submits the login and
// consent forms over HTTP (keeping the pages' cookies) and keeps the redirect's code and iss; the
// script then calls transport.finishAuth (2.x with iss, RFC 9207) and connects again, as an app
// does. `flow` lists the tools, books, waits past the access token's life and books again (after
// a refresh). `stepup` runs STUDIOFLOW_PROMOTE (a command, as a JSON list) if given, then books:
// a 403 insufficient_scope makes the SDK re-authorize, or not, then reads once more. OAUTH_GRANT_TYPES
// (comma-separated) replaces the grant types the client registers with. Prints one line of JSON, or
// exits 1 naming the failed check.
import { execFileSync } from "node:child_process";

const [sdk, mode, url] = process.argv.slice(2);
const REDIRECT = "http://127.0.0.1:9/callback";

class CheckFailed extends Error {}
function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

const api =
  sdk === "1"
    ? {
        ...(await import("@modelcontextprotocol/sdk/client/index.js")),
        ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
        ...(await import("@modelcontextprotocol/sdk/client/auth.js")),
      }
    : await import("@modelcontextprotocol/client");
const { Client, StreamableHTTPClientTransport, UnauthorizedError } = api;

const requests = [];
async function recordingFetch(input, init) {
  const response = await fetch(input, init);
  const target = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  let grant = "";
  if (target.pathname === "/oauth/token" && init?.body) grant = " " + new URLSearchParams(init.body.toString()).get("grant_type");
  requests.push(`${init?.method ?? "GET"} ${target.pathname} ${response.status}${grant}`);
  return response;
}

// The person at the browser.
const cookies = new Map();
const pages = [];
async function browse(method, target, body) {
  const headers = { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; ") };
  if (body) headers["content-type"] = "application/x-www-form-urlencoded";
  const response = await fetch(target, { method, headers, body, redirect: "manual" });
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(";");
    const at = pair.indexOf("=");
    cookies.set(pair.slice(0, at), pair.slice(at + 1));
  }
  pages.push(`${method} ${new URL(target).pathname} ${response.status}`);
  return response;
}
function hidden(html) {
  return Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2].replaceAll("&amp;", "&")]));
}
async function signIn(authorizationUrl) {
  let response = await browse("GET", authorizationUrl.toString());
  for (let step = 0; step < 6; step++) {
    if (response.status === 302 || response.status === 303) {
      const location = new URL(response.headers.get("location"), authorizationUrl);
      if (location.toString().startsWith(REDIRECT)) {
        check(location.searchParams.get("code"), `the authorization ended without a code: ${location}`);
        return { code: location.searchParams.get("code"), iss: location.searchParams.get("iss") };
      }
      response = await browse("GET", location.toString());
      continue;
    }
    const html = await response.text();
    check(response.status === 200, `${response.status}: ${html.slice(0, 300)}`);
    check(!html.includes("<script"), "a sign-in page carries a script");
    const fields = hidden(html);
    if (html.includes('name="password"')) {
      Object.assign(fields, { username: process.env.OAUTH_USER, password: process.env.OAUTH_PASSWORD });
      response = await browse("POST", new URL("/oauth/login", authorizationUrl).toString(), new URLSearchParams(fields).toString());
    } else {
      check(html.includes('value="allow"'), `the consent page offers no Allow: ${html.slice(0, 500)}`);
      fields.consent = "allow";
      response = await browse("POST", new URL("/oauth/consent", authorizationUrl).toString(), new URLSearchParams(fields).toString());
    }
  }
  throw new CheckFailed(`the sign-in did not end: ${pages}`);
}

class Provider {
  constructor() {
    this.saved = [];
    this.result = undefined;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    const grant_types = (process.env.OAUTH_GRANT_TYPES ?? "authorization_code,refresh_token").split(",");
    return { client_name: `studioflow-ts-${sdk}`, redirect_uris: [REDIRECT], grant_types, response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info) {
    this.info = info;
  }
  tokens() {
    return this.current;
  }
  saveTokens(tokens) {
    this.current = tokens;
    this.saved.push(tokens.scope);
  }
  async redirectToAuthorization(authorizationUrl) {
    this.result = await signIn(authorizationUrl);
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
  invalidateCredentials(kind) {
    if (kind === "all" || kind === "tokens") this.current = undefined;
    if (kind === "all") this.info = undefined;
  }
}

const provider = new Provider();
let client, transport;
function unauthorized(error) {
  return error instanceof UnauthorizedError || error?.name === "UnauthorizedError";
}
async function finish() {
  check(provider.result, "the SDK asked for no authorization");
  const { code, iss } = provider.result;
  provider.result = undefined;
  if (sdk === "1") await transport.finishAuth(code);
  else await transport.finishAuth(code, iss);
}
async function connect() {
  transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch });
  client = new Client({ name: `studioflow-ts-${sdk}`, version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (error) {
    if (!unauthorized(error)) throw error;
    await finish();
    transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch });
    client = new Client({ name: `studioflow-ts-${sdk}`, version: "1.0.0" });
    await client.connect(transport);
  }
}
/** A tool call; a re-authorization on the way is finished and the call made again, as an app does. */
async function call(name, args) {
  let result;
  try {
    result = await client.callTool({ name, arguments: args });
  } catch (error) {
    if (!unauthorized(error)) throw error;
    await finish();
    result = await client.callTool({ name, arguments: args });
  }
  check(!result.isError, `${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}
async function book(day, who) {
  const slots = (await call("find_free_slots", { from: `${day}T10:00`, to: `${day}T20:00`, duration_minutes: 120, limit: 1 })).slots;
  check(slots.length === 1, `no free slot on ${day}`);
  const end = new Date(Date.parse(slots[0].start) + 2 * 3600 * 1000);
  const created = await call("create_booking", { room: slots[0].room, client: who, start: slots[0].start, end: end.toISOString() });
  return created.bookings[0].id;
}

try {
  const out = {};
  await connect();
  const { tools } = await client.listTools();
  const expected = Number(process.env.EXPECTED_TOOLS);
  check(tools.length === expected, `${tools.length} tools, expected ${expected}`);
  out.first_scope = provider.current?.scope;
  if (mode === "flow") {
    out.booking = await book("2026-10-14", "client-001");
    await new Promise((done) => setTimeout(done, (provider.current.expires_in + 1.5) * 1000));
    out.after_expiry = await book("2026-11-03", "client-002");
  } else {
    if (process.env.STUDIOFLOW_PROMOTE) {
      const [program, ...args] = JSON.parse(process.env.STUDIOFLOW_PROMOTE);
      execFileSync(program, args);
    }
    try {
      out.booking = await book("2026-10-14", "client-001");
      // The token the step-up gave must still read: a scope asked for alone would not.
      out.rooms_after = (await call("list_rooms", {})).rooms.length;
    } catch (error) {
      if (error instanceof CheckFailed) throw error;
      out.refused = `${error?.name}: ${error?.message}`;
    }
  }
  out.holds_refresh_token = Boolean(provider.current?.refresh_token);
  out.last_scope = provider.current?.scope;
  out.scopes_saved = provider.saved;
  out.client_id = provider.info?.client_id;
  out.pages = pages;
  out.requests = requests;
  await client.close();
  console.log(JSON.stringify(out));
} catch (error) {
  console.error(`oauth interop (sdk ${sdk}): FAILED: ${error instanceof CheckFailed ? error.message : error?.stack ?? error}`);
  console.error(JSON.stringify({ pages, requests }));
  process.exit(1);
}
