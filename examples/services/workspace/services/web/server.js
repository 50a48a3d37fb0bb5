// The web service: GET /health → {"service":"web","status":"ok"}. Port from $PORT (default 4102).
const http = require("node:http");
const port = Number(process.env.PORT || 4102);
http
  .createServer((req, res) => {
    if (req.url === "/health") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ service: "web", status: "ok" }));
      return;
    }
    res.writeHead(404).end();
  })
  .listen(port, "127.0.0.1", () => console.log(`web listening on ${port}`));
