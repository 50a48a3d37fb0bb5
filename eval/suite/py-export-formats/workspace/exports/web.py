from exports.render import render


def content_type(fmt):
    if fmt == "csv":
        return "text/csv; charset=utf-8"
    if fmt == "json":
        return "application/json"
    if fmt == "markdown":
        return "text/markdown; charset=utf-8"
    raise ValueError("unknown format " + fmt)


def respond(rows, fmt):
    """(status, headers, body) for an HTTP answer with the rows in the given format."""
    return 200, {"Content-Type": content_type(fmt)}, render(rows, fmt)
