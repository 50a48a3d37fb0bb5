import http from "node:http";
import { readBody, sendJson, sendText } from "./http.js";
import { createStore } from "./store.js";

const KEY_PATH = /^\/kv\/([A-Za-z0-9._-]{1,100})$/;

export function createApp({ store = createStore() } = {}) {
  return http.createServer(async (req, res) => {
    try {
      const m = KEY_PATH.exec(req.url);
      if (!m) return sendJson(res, 404, { error: "not found" });
      const key = m[1];
      if (req.method === "GET") {
        const value = store.get(key);
        if (value === undefined) return sendJson(res, 404, { error: "no such key" });
        return sendText(res, 200, value);
      }
      if (req.method === "PUT") {
        store.set(key, await readBody(req));
        return sendJson(res, 200, { key });
      }
      if (req.method === "DELETE") {
        if (!store.delete(key)) return sendJson(res, 404, { error: "no such key" });
        res.writeHead(204);
        return res.end();
      }
      sendJson(res, 405, { error: "method not allowed" });
    } catch (err) {
      sendJson(res, 500, { error: String(err.message ?? err) });
    }
  });
}
