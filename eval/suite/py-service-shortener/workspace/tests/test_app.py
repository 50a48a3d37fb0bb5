import json
import threading
import unittest
import urllib.request
from http.server import ThreadingHTTPServer

from shortener.app import make_handler
from shortener.store import Store


class AppTest(unittest.TestCase):
    def setUp(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(Store()))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def test_health(self):
        with urllib.request.urlopen(self.base + "/health") as r:
            self.assertEqual(json.load(r), {"ok": True})


if __name__ == "__main__":
    unittest.main()
