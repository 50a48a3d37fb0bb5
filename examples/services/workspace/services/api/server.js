// The api service: GET /health → {"service":"api","status":"ok"}. Port from $PORT (default 4101).
const http = require("node:http");
const port = Number(process.env.PORT || 4101);
http
  .createServer((req, res) => {
    if (req.url === "/health") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ service: "api", status: "ok" }));
      return;
    }
    res.writeHead(404).end();
  })
  .listen(port, "127.0.0.1", () => console.log(`api listening on ${port}`));
