import http from "node:http";

const orders = [{ id: 10, userId: 1, total: 42 }];

/** The orders service: GET /orders lists the orders. */
export function createOrdersServer() {
  return http.createServer((req, res) => {
    if (req.method === "GET" && req.url === "/orders") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(orders));
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: "not found" }));
  });
}
