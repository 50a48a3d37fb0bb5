import contextlib
import io
import re
import tempfile
import unittest

from exports import formats
from exports.cli import main
from exports.files import filename, write_export
from exports.render import render
from exports.web import content_type, respond

ROWS = [{"item": "a<b", "n": 3}, {"item": "tab\there", "extra": "x & y\nz"}]


class Shout(formats.Format):
    name = "shout"
    extension = "txt"
    content_type = "text/plain; charset=utf-8"

    def render(self, rows, columns):
        return "|".join(columns).upper() + "\n"


def flat(html_text):
    return re.sub(r">\s+<", "><", html_text.strip())


class RegistryHiddenTest(unittest.TestCase):
    def test_builtin_formats_are_registered(self):
        self.assertEqual(formats.names(), ["csv", "html", "json", "markdown", "tsv"])
        for name in formats.names():
            self.assertIsInstance(formats.get(name), formats.Format)
            self.assertEqual(formats.get(name).name, name)

    def test_a_new_format_reaches_every_caller(self):
        got = formats.register(Shout())
        self.addCleanup(formats.unregister, "shout")
        self.assertIsInstance(got, Shout)
        self.assertIn("shout", formats.names())
        self.assertEqual(render(ROWS, "shout"), "ITEM|N|EXTRA\n")
        self.assertEqual(filename("daily", "shout"), "daily.txt")
        self.assertEqual(content_type("shout"), "text/plain; charset=utf-8")
        self.assertEqual(respond(ROWS, "shout"), (200, {"Content-Type": "text/plain; charset=utf-8"}, "ITEM|N|EXTRA\n"))
        with tempfile.TemporaryDirectory() as d:
            path = write_export(ROWS, d, "daily", "shout")
            self.assertTrue(path.endswith("daily.txt"))
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "ITEM|N|EXTRA\n")
        out = io.StringIO()
        self.assertEqual(main(["--format", "shout"], stdin=io.StringIO('[{"k": 1}]'), stdout=out), 0)
        self.assertEqual(out.getvalue(), "K\n")

    def test_unregistered_formats_are_gone_everywhere(self):
        formats.register(Shout())
        formats.unregister("shout")
        with self.assertRaises(formats.UnknownFormat):
            render(ROWS, "shout")
        with self.assertRaises(ValueError):
            filename("x", "shout")
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            main(["--format", "shout"], stdin=io.StringIO("[]"), stdout=io.StringIO())

    def test_unknown_format_lists_the_known_ones(self):
        with self.assertRaises(formats.UnknownFormat) as e:
            content_type("yaml")
        self.assertIsInstance(e.exception, ValueError)
        self.assertIn("yaml", str(e.exception))
        self.assertIn("csv, html, json, markdown, tsv", str(e.exception))

    def test_duplicate_names_are_refused(self):
        class OtherCsv(Shout):
            name = "csv"

        with self.assertRaises(formats.DuplicateFormat):
            formats.register(OtherCsv())
        self.assertEqual(render([{"a": 1}], "csv"), "a\n1\n")

    def test_tsv(self):
        self.assertEqual(render(ROWS, "tsv"), "item\tn\textra\na<b\t3\t\ntab here\t\tx & y z\n")
        self.assertEqual((filename("r", "tsv"), content_type("tsv")), ("r.tsv", "text/tab-separated-values; charset=utf-8"))

    def test_html_escapes_everything(self):
        rows = [{"<k>": "a<b", "n": 3}, {"<k>": '"q"', "m": "x & y"}]
        self.assertEqual(
            flat(render(rows, "html")),
            "<table><thead><tr><th>&lt;k&gt;</th><th>n</th><th>m</th></tr></thead>"
            "<tbody><tr><td>a&lt;b</td><td>3</td><td></td></tr>"
            "<tr><td>&quot;q&quot;</td><td></td><td>x &amp; y</td></tr></tbody></table>",
        )
        self.assertEqual((filename("r", "html"), content_type("html")), ("r.html", "text/html; charset=utf-8"))

    def test_existing_formats_unchanged(self):
        self.assertEqual(render(ROWS, "csv"), 'item,n,extra\na<b,3,\ntab\there,,"x & y\nz"\n')
        self.assertEqual(filename("r", "markdown"), "r.md")
        self.assertEqual(content_type("csv"), "text/csv; charset=utf-8")


if __name__ == "__main__":
    unittest.main()
