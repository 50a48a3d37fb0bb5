import argparse
import json
import sys

from exports.render import render

FORMATS = ["csv", "json", "markdown"]


def main(argv=None, stdin=None, stdout=None):
    """Reads a JSON list of objects from stdin and prints it in --format (default csv)."""
    parser = argparse.ArgumentParser(prog="export")
    parser.add_argument("--format", default="csv", choices=FORMATS)
    args = parser.parse_args(argv)
    rows = json.load(stdin or sys.stdin)
    (stdout or sys.stdout).write(render(rows, args.format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
