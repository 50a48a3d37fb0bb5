import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

from shortener.store import Store


class Server:
    """server.py in a child process, on a free port."""

    def __init__(self, data_file=None):
        env = {**os.environ, "PORT": "0"}
        env.pop("DATA_FILE", None)
        if data_file:
            env["DATA_FILE"] = data_file
        self.proc = subprocess.Popen([sys.executable, "server.py"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (\d+)", line)
        if not m:
            self.proc.kill()
            raise AssertionError(f"server did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(m.group(1))

    def call(self, method, path, body=None, raw=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        data = raw if raw is not None else (None if body is None else json.dumps(body))
        c.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        text = r.read()
        c.close()
        return r.status, r.getheader("Location"), json.loads(text) if text else None

    def stop(self):
        self.proc.terminate()
        self.proc.wait(5)
        self.proc.stdout.close()
        self.proc.stderr.close()


class ShortenerHiddenTest(unittest.TestCase):
    def test_shorten_follow_and_count_over_http(self):
        s = Server()
        try:
            status, _, a = s.call("POST", "/links", {"url": "https://example.com/one?x=1"})
            self.assertEqual(status, 201)
            self.assertEqual(a["url"], "https://example.com/one?x=1")
            self.assertRegex(a["code"], r"^[0-9A-Za-z]{1,16}$")
            status, _, b = s.call("POST", "/links", {"url": "http://example.net/"})
            self.assertEqual(status, 201)
            self.assertNotEqual(a["code"], b["code"])
            status, _, again = s.call("POST", "/links", {"url": "https://example.com/one?x=1"})
            self.assertEqual((status, again), (200, a))
            for _ in range(3):
                status, location, _ = s.call("GET", "/" + a["code"])
                self.assertEqual((status, location), (302, "https://example.com/one?x=1"))
            self.assertEqual(s.call("GET", "/links/" + a["code"]), (200, None, {"code": a["code"], "url": "https://example.com/one?x=1", "visits": 3}))
            self.assertEqual(s.call("GET", "/links/" + b["code"])[2]["visits"], 0)
            self.assertEqual(s.call("GET", "/zzzzzz")[0], 404)
            self.assertEqual(s.call("GET", "/links/zzzzzz")[0], 404)
        finally:
            s.stop()

    def test_bad_input_is_a_400(self):
        s = Server()
        try:
            for url in ["ftp://example.com/f", "javascript:alert(1)", "example.com", "https://", "", 42, None]:
                self.assertEqual(s.call("POST", "/links", {"url": url})[:3:2], (400, {"error": "invalid url"}), repr(url))
            self.assertEqual(s.call("POST", "/links", {"link": "https://example.com"})[2], {"error": "invalid url"})
            self.assertEqual(s.call("POST", "/links", raw="{nope")[:3:2], (400, {"error": "invalid json"}))
            self.assertEqual(s.call("POST", "/links", ["https://example.com"])[0], 400)
        finally:
            s.stop()

    def test_links_and_visits_survive_a_restart(self):
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "state", "links.json")
            os.makedirs(os.path.dirname(data))
            s = Server(data)
            try:
                code = s.call("POST", "/links", {"url": "https://example.org/keep"})[2]["code"]
                s.call("GET", "/" + code)
                s.call("GET", "/" + code)
            finally:
                s.stop()
            self.assertTrue(os.path.exists(data))
            self.assertEqual([f for f in os.listdir(os.path.dirname(data)) if f != "links.json"], [], "no temporary files left")
            s = Server(data)
            try:
                self.assertEqual(s.call("GET", "/links/" + code)[2], {"code": code, "url": "https://example.org/keep", "visits": 2})
                self.assertEqual(s.call("GET", "/" + code)[1], "https://example.org/keep")
                status, _, other = s.call("POST", "/links", {"url": "https://example.org/new"})
                self.assertEqual(status, 201)
                self.assertNotEqual(other["code"], code, "codes issued before the restart are not reused")
                self.assertEqual(s.call("POST", "/links", {"url": "https://example.org/keep"})[:3:2], (200, {"code": code, "url": "https://example.org/keep"}))
            finally:
                s.stop()

    def test_store_api(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "l.json")
            st = Store(path)
            code, created = st.add("https://a.example/")
            self.assertTrue(created)
            self.assertEqual(st.add("https://a.example/"), (code, False))
            self.assertEqual(st.visit(code), "https://a.example/")
            self.assertIsNone(st.visit("nope"))
            self.assertIsNone(st.get("nope"))
            self.assertEqual(Store(path).get(code), {"code": code, "url": "https://a.example/", "visits": 1})
        mem = Store()
        self.assertTrue(mem.add("https://b.example/")[1])


if __name__ == "__main__":
    unittest.main()
