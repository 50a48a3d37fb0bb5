import csv
import io
import json


def columns_of(rows):
    cols = []
    for row in rows:
        for k in row:
            if k not in cols:
                cols.append(k)
    return cols


def render(rows, fmt):
    """The rows (a list of dicts) as text in the given format."""
    cols = columns_of(rows)
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(cols)
        for row in rows:
            w.writerow([row.get(c, "") for c in cols])
        return out.getvalue()
    elif fmt == "json":
        return json.dumps([{c: row.get(c) for c in cols} for row in rows], indent=2) + "\n"
    elif fmt == "markdown":
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for row in rows:
            lines.append("| " + " | ".join(str(row.get(c, "")) for c in cols) + " |")
        return "\n".join(lines) + "\n"
    else:
        raise ValueError("unknown format " + fmt)
