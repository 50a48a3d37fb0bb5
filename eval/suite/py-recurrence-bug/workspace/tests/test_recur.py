import unittest
from datetime import date

from recur.expand import occurrences
from recur.rule import parse_rule


def expand(text, start, until):
    return occurrences(parse_rule(text), date.fromisoformat(start), date.fromisoformat(until))


class RecurTest(unittest.TestCase):
    def test_daily_every_third_day(self):
        self.assertEqual(expand("FREQ=DAILY;INTERVAL=3", "2024-03-01", "2024-03-08"),
                         [date(2024, 3, 1), date(2024, 3, 4), date(2024, 3, 7)])

    def test_weekly_on_two_days(self):
        got = expand("FREQ=WEEKLY;BYDAY=FR,MO", "2024-03-04", "2024-03-12")
        self.assertEqual(got, [date(2024, 3, 4), date(2024, 3, 8), date(2024, 3, 11)])

    def test_monthly_on_the_15th(self):
        got = expand("FREQ=MONTHLY;BYMONTHDAY=15", "2024-11-20", "2025-02-01")
        self.assertEqual(got, [date(2024, 12, 15), date(2025, 1, 15)])

    def test_monthly_at_the_end_of_the_month(self):
        got = expand("FREQ=MONTHLY;BYMONTHDAY=31", "2024-01-01", "2024-04-30")
        self.assertEqual(got, [date(2024, 1, 31), date(2024, 2, 29), date(2024, 3, 31), date(2024, 4, 30)])

    def test_bad_rules(self):
        for bad in ("FREQ=YEARLY", "FREQ=WEEKLY;BYDAY=XX", "FREQ=DAILY;COLOR=RED"):
            with self.assertRaises(ValueError):
                parse_rule(bad)


if __name__ == "__main__":
    unittest.main()
