import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { LedgerloopError, errorMessage } from "../errors.js";
import {
  HttpError,
  listThreads,
  parseTypes,
  requireKnownThread,
  threadCheckpoints,
  threadContext,
  threadDetail,
  threadEvent,
  threadEvents,
  threadSteps,
  type ReadOnlyState,
  type ThreadList,
  type ViewerSource,
} from "./data.js";
import { openViewerSource } from "../ledger/open-viewer-state.js";

export interface ViewerOptions extends ViewerSource {
  /** 0 (the default) picks a free port. */
  port?: number;
  /**
   * Interface to listen on; loopback by default. Given explicitly, the Host-header guard against
   * DNS rebinding is lifted: the user chose to serve beyond this machine.
   */
  host?: string;
  /** Where unexpected errors are reported (never to the client). Default: stderr. */
  onError?: (message: string) => void;
}

export interface Viewer {
  url: string;
  close(): Promise<void>;
}

const ASSETS: Record<string, { file: string; type: string }> = {
  "/": { file: "page.html", type: "text/html; charset=utf-8" },
  "/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/style.css": { file: "style.css", type: "text/css; charset=utf-8" },
};

/** Scripts and styles from this server only; no inline code, no eval, no framing, no foreign fetches. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-resource-policy": "same-origin",
  "cross-origin-opener-policy": "same-origin",
  "cache-control": "no-store",
};

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** Host header's name part, lower-cased (`[::1]:8080` → `[::1]`). */
function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1);
  const colon = h.lastIndexOf(":");
  return colon === -1 ? h : h.slice(0, colon);
}

function isLoopbackHost(header: string | undefined): boolean {
  if (!header) return false;
  const name = hostName(header);
  return LOOPBACK_NAMES.has(name) || name.endsWith(".localhost") || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

// Thread and event ids are ours or the user's (--thread); anything else in a path is a bad request.
const ID = /^[\w.:@+-]{1,200}$/;

function decodeSegment(s: string, what: string): string {
  let v: string;
  try {
    v = decodeURIComponent(s);
  } catch {
    throw new HttpError(400, `malformed ${what} in the URL`);
  }
  if (!ID.test(v)) throw new HttpError(400, `invalid ${what} "${v.slice(0, 80)}"`);
  return v;
}

function intParam(raw: string | null, name: string, { min, max, fallback }: { min: number; max: number; fallback: number }): number {
  if (raw === null || raw === "") return fallback;
  if (!/^-?\d+$/.test(raw)) throw new HttpError(400, `${name} must be an integer, got "${raw.slice(0, 40)}"`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new HttpError(400, `${name} must be between ${min} and ${max}, got ${raw.slice(0, 40)}`);
  return n;
}

/** The page's ES modules, imported by app.js: every `.js` file of app/, served as `/app/<name>.js`. */
const MODULE_DIR = "app";

function loadAssets(): Map<string, { body: Buffer; type: string }> {
  const dir = fileURLToPath(new URL(".", import.meta.url));
  const out = new Map<string, { body: Buffer; type: string }>();
  for (const [route, a] of Object.entries(ASSETS)) out.set(route, { body: fs.readFileSync(dir + a.file), type: a.type });
  // Read once at start into a fixed table: a request never names a file on disk.
  for (const f of fs
    .readdirSync(dir + MODULE_DIR)
    .filter((n) => n.endsWith(".js"))
    .sort()) {
    out.set(`/${MODULE_DIR}/${f}`, { body: fs.readFileSync(`${dir}${MODULE_DIR}/${f}`), type: "text/javascript; charset=utf-8" });
  }
  return out;
}

/**
 * Starts the run viewer: a read-only JSON API over a state (a workspace's SQLite database, or with
 * `state` a PostgreSQL one) and the page that shows it. Loopback only unless `host` says otherwise.
 */
export async function startViewer(opts: ViewerOptions): Promise<Viewer> {
  const source = await openViewerSource(opts);
  const host = opts.host ?? "127.0.0.1";
  const guardHost = opts.host === undefined;
  const assets = loadAssets();
  const report = opts.onError ?? ((m: string) => process.stderr.write(`ledgerloop web: ${m}\n`));

  const send = (res: http.ServerResponse, status: number, body: string | Buffer, type: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...SECURITY_HEADERS, "content-type": type, "content-length": String(Buffer.byteLength(body)), ...extra });
    res.end(body);
  };
  const sendJson = (res: http.ServerResponse, status: number, value: unknown) => send(res, status, JSON.stringify(value), "application/json; charset=utf-8");

  async function withState<T>(thread: string, fn: (st: ReadOnlyState) => Promise<T> | T): Promise<T> {
    const st = await source.open();
    try {
      return await fn(await requireKnownThread(st, thread));
    } finally {
      st?.close();
    }
  }

  async function api(parts: string[], query: URLSearchParams): Promise<unknown> {
    if (parts.length === 1 && parts[0] === "threads") {
      const st = await source.open();
      try {
        const list: ThreadList = { workspace: source.label, backend: source.kind, threads: st ? await listThreads(st) : [] };
        return list;
      } finally {
        st?.close();
      }
    }
    if (parts[0] !== "threads" || parts.length < 2) throw new HttpError(404, "no such API route");
    const thread = decodeSegment(parts[1]!, "thread id");
    const rest = parts.slice(2);
    if (rest.length === 0) return withState(thread, (st) => threadDetail(st, thread));
    if (rest.length === 1 && rest[0] === "steps") {
      const from = intParam(query.get("from"), "from", { min: 0, max: 1e9, fallback: 0 });
      const to = intParam(query.get("to"), "to", { min: 0, max: 1e9, fallback: 1e9 });
      if (from > to) throw new HttpError(400, `from (${from}) must not be greater than to (${to})`);
      const lastRaw = query.get("last");
      const last = lastRaw === null || lastRaw === "" ? undefined : intParam(lastRaw, "last", { min: 1, max: 1000, fallback: 1 });
      return withState(thread, (st) => threadSteps(st, thread, { from, to, ...(last !== undefined ? { last } : {}) }));
    }
    if (rest.length === 1 && rest[0] === "events") {
      const types = parseTypes(query.get("type"));
      const after = intParam(query.get("after"), "after", { min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 });
      const limit = intParam(query.get("limit"), "limit", { min: 1, max: 1000, fallback: 200 });
      return withState(thread, (st) => threadEvents(st, thread, { types, after, limit }));
    }
    if (rest.length === 2 && rest[0] === "events") {
      const id = decodeSegment(rest[1]!, "event id");
      return withState(thread, (st) => threadEvent(st, thread, id));
    }
    if (rest.length === 2 && rest[0] === "context") {
      const raw = decodeSegment(rest[1]!, "step");
      if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw new HttpError(400, `step must be a positive integer, got "${raw}"`);
      return withState(thread, (st) => threadContext(st, thread, Number(raw)));
    }
    if (rest.length === 1 && rest[0] === "checkpoints") {
      const limit = intParam(query.get("limit"), "limit", { min: 1, max: 1000, fallback: 200 });
      const beforeRaw = query.get("before");
      if (beforeRaw && !ID.test(beforeRaw)) throw new HttpError(400, `invalid checkpoint id "${beforeRaw.slice(0, 80)}"`);
      const before = beforeRaw || undefined;
      return withState(thread, (st) => threadCheckpoints(st, thread, { limit, ...(before ? { before } : {}) }));
    }
    throw new HttpError(404, "no such API route");
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (guardHost && !isLoopbackHost(req.headers.host)) {
      // A page on another origin that rebinds its name to 127.0.0.1 arrives with its own Host.
      return sendJson(res, 403, { error: "this viewer only answers requests addressed to localhost" });
    }
    if (req.method !== "GET") {
      return send(res, 405, JSON.stringify({ error: "the viewer is read-only: only GET is allowed" }), "application/json; charset=utf-8", { allow: "GET" });
    }
    const url = new URL(req.url ?? "/", "http://viewer.invalid");
    const asset = assets.get(url.pathname === "/index.html" ? "/" : url.pathname);
    if (asset) return send(res, 200, asset.body, asset.type);
    if (url.pathname === "/favicon.ico") return send(res, 204, "", "text/plain");
    if (!url.pathname.startsWith("/api/")) return sendJson(res, 404, { error: `not found: ${url.pathname.slice(0, 100)}` });
    const parts = url.pathname.slice("/api/".length).replace(/\/+$/, "").split("/");
    sendJson(res, 200, await api(parts, url.searchParams));
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((thrown: unknown) => {
      // The backend's own errors (SQLite's never say which file) as one line naming the state.
      const err = source.named(thrown);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) return sendJson(res, err.status, { error: err.message });
      // Our own errors are one-line messages (a locked or corrupt database); anything else stays in the log.
      if (err instanceof LedgerloopError) {
        report(`${req.url}: ${err.message}`);
        return sendJson(res, 503, { error: err.message, code: err.code });
      }
      report(`${req.url}: ${err instanceof Error ? (err.stack ?? err.message) : errorMessage(err)}`);
      sendJson(res, 500, { error: "internal error (details in the viewer's log)" });
    });
  });
  // Slow clients cannot hold the server: a viewer request is small and answers fast.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;

  // A port that cannot be had must not leave the database's connections open.
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      const where = `${host}:${opts.port ?? 0}`;
      if (err.code === "EADDRINUSE")
        reject(new LedgerloopError("PORT_IN_USE", `${where} is already in use; pick another --port (0 picks a free one)`, { cause: err }));
      else if (err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND")
        reject(new LedgerloopError("HOST_UNAVAILABLE", `cannot listen on ${where}: no such local address`, { cause: err }));
      else if (err.code === "EACCES")
        reject(new LedgerloopError("PORT_DENIED", `not allowed to listen on ${where} (ports below 1024 need privileges)`, { cause: err }));
      else reject(err);
    });
    server.listen(opts.port ?? 0, host, () => {
      server.removeAllListeners("error");
      server.on("error", (err) => report(`server error: ${errorMessage(err)}`));
      resolve();
    });
  }).catch(async (err: unknown) => {
    await source.close().catch(() => {});
    throw err;
  });
  const addr = server.address() as AddressInfo;
  const shown = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  const urlHost = addr.address === "0.0.0.0" || addr.address === "::" ? "localhost" : shown;
  return {
    url: `http://${urlHost}:${addr.port}/`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await source.close();
    },
  };
}
