import io
import unittest

from exports.cli import main
from exports.files import filename
from exports.render import render
from exports.web import content_type, respond

ROWS = [{"name": "tea", "qty": 2}, {"name": "mug", "qty": 1, "note": "blue"}]


class ExportTest(unittest.TestCase):
    def test_csv(self):
        self.assertEqual(render(ROWS, "csv"), "name,qty,note\ntea,2,\nmug,1,blue\n")

    def test_markdown(self):
        self.assertIn("| mug | 1 | blue |", render(ROWS, "markdown"))

    def test_files_and_web(self):
        self.assertEqual(filename("report", "markdown"), "report.md")
        self.assertEqual(content_type("json"), "application/json")
        self.assertEqual(respond(ROWS, "csv")[0], 200)

    def test_cli(self):
        out = io.StringIO()
        main(["--format", "json"], stdin=io.StringIO('[{"a": 1}]'), stdout=out)
        self.assertIn('"a": 1', out.getvalue())


if __name__ == "__main__":
    unittest.main()
