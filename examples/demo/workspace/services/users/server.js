import http from "node:http";

const users = [
  { id: 1, name: "Ada" },
  { id: 2, name: "Linus" },
];

/** The users service: GET /users lists the users. */
export function createUsersServer() {
  return http.createServer((req, res) => {
    if (req.method === "GET" && req.url === "/users") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(users));
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: "not found" }));
  });
}
