from datetime import date, timedelta

from recur.rule import WEEKDAYS


def occurrences(rule, start, until):
    """The dates from start to until (both included) on which the rule recurs, in order."""
    out = []
    if rule.freq == "DAILY":
        d = start
        while d <= until:
            out.append(d)
            d += timedelta(days=rule.interval)
    elif rule.freq == "WEEKLY":
        days = rule.byday or [WEEKDAYS[start.weekday()]]
        week = start - timedelta(days=start.weekday())
        while week <= until:
            for wd in days:
                d = week + timedelta(days=WEEKDAYS.index(wd))
                if start <= d <= until:
                    out.append(d)
            week += timedelta(weeks=rule.interval)
    elif rule.freq == "MONTHLY":
        day = rule.bymonthday or start.day
        y, m = start.year, start.month
        while True:
            d = date(y, m, day)
            if d > until:
                break
            if d >= start:
                out.append(d)
            m += rule.interval
            if m > 12:
                y += 1
                m -= 12
    return out
