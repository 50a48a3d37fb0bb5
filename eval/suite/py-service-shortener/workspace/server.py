import os
from http.server import ThreadingHTTPServer

from shortener.app import default_store, make_handler


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8000"))), make_handler(default_store()))
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
