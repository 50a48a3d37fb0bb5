import json
from http.server import BaseHTTPRequestHandler

from shortener.store import Store


def make_handler(store):
    class Handler(BaseHTTPRequestHandler):
        def send_json(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                return self.send_json(200, {"ok": True})
            self.send_json(404, {"error": "not found"})

        def log_message(self, *args):
            pass  # keep the output to the one "listening" line

    return Handler


def default_store():
    return Store()
