WEEKDAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
FREQS = ("DAILY", "WEEKLY", "MONTHLY")


class Rule:
    def __init__(self, freq, interval=1, byday=None, bymonthday=None):
        self.freq = freq
        self.interval = interval
        self.byday = byday
        self.bymonthday = bymonthday


def parse_rule(text):
    """Parses "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE" style rules."""
    fields = {}
    for part in text.split(";"):
        key, _, value = part.partition("=")
        fields[key.strip().upper()] = value.strip().upper()
    freq = fields.pop("FREQ", None)
    if freq not in FREQS:
        raise ValueError(f"FREQ must be one of {', '.join(FREQS)}: {text}")
    rule = Rule(freq)
    if "INTERVAL" in fields:
        rule.interval = int(fields.pop("INTERVAL"))
    if "BYDAY" in fields:
        rule.byday = fields.pop("BYDAY").split(",")
        for d in rule.byday:
            if d not in WEEKDAYS:
                raise ValueError(f"unknown weekday {d}: {text}")
    if "BYMONTHDAY" in fields:
        rule.bymonthday = int(fields.pop("BYMONTHDAY"))
    if fields:
        raise ValueError(f"unknown fields {', '.join(sorted(fields))}: {text}")
    return rule
