import http from "node:http";
import { createDb } from "./db.js";
import { readJson, sendJson } from "./http.js";

export function createApp({ db = createDb() } = {}) {
  return http.createServer(async (req, res) => {
    try {
      if (req.method === "GET" && req.url === "/notes") return sendJson(res, 200, db.list());
      if (req.method === "POST" && req.url === "/notes") {
        const body = await readJson(req);
        if (typeof body.text !== "string" || !body.text) return sendJson(res, 400, { error: "text required" });
        return sendJson(res, 201, db.add(body.text));
      }
      sendJson(res, 404, { error: "not found" });
    } catch (err) {
      sendJson(res, 500, { error: String(err.message ?? err) });
    }
  });
}
