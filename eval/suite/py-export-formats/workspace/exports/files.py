import os

from exports.render import render


def filename(base, fmt):
    if fmt == "csv":
        return base + ".csv"
    elif fmt == "json":
        return base + ".json"
    elif fmt == "markdown":
        return base + ".md"
    raise ValueError("unknown format " + fmt)


def write_export(rows, directory, base, fmt):
    """Writes the rows to <directory>/<base>.<ext> and returns the path."""
    path = os.path.join(directory, filename(base, fmt))
    with open(path, "w", encoding="utf-8") as f:
        f.write(render(rows, fmt))
    return path
