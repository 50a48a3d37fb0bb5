import unittest
from datetime import date

from recur.agenda import agenda
from recur.expand import next_occurrence, occurrences
from recur.rule import parse_rule

D = date.fromisoformat


def days(*isos):
    return [D(x) for x in isos]


class RecurHiddenTest(unittest.TestCase):
    def test_month_ends_fall_on_the_last_day(self):
        rule = parse_rule("FREQ=MONTHLY;BYMONTHDAY=30")
        self.assertEqual(occurrences(rule, D("2023-01-30"), D("2023-04-01")), days("2023-01-30", "2023-02-28", "2023-03-30"))
        rule = parse_rule("FREQ=MONTHLY")
        self.assertEqual(occurrences(rule, D("2024-01-31"), D("2024-06-30")),
                         days("2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30", "2024-05-31", "2024-06-30"))

    def test_monthly_intervals_across_years(self):
        rule = parse_rule("FREQ=MONTHLY;INTERVAL=5;BYMONTHDAY=31")
        self.assertEqual(occurrences(rule, D("2024-10-01"), D("2026-01-01")), days("2024-10-31", "2025-03-31", "2025-08-31"))
        rule = parse_rule("FREQ=MONTHLY;INTERVAL=25")
        self.assertEqual(occurrences(rule, D("2023-12-02"), D("2028-01-01")), days("2023-12-02", "2026-01-02"))

    def test_weekly_order_and_no_duplicates(self):
        rule = parse_rule("FREQ=WEEKLY;INTERVAL=2;BYDAY=SU,WE,MO,WE")
        self.assertEqual(occurrences(rule, D("2024-03-06"), D("2024-03-25")), days("2024-03-06", "2024-03-10", "2024-03-18", "2024-03-20", "2024-03-24"))

    def test_count(self):
        rule = parse_rule("FREQ=DAILY;INTERVAL=10;COUNT=3")
        self.assertEqual(occurrences(rule, D("2024-02-25")), days("2024-02-25", "2024-03-06", "2024-03-16"))
        self.assertEqual(occurrences(rule, D("2024-02-25"), D("2024-03-10")), days("2024-02-25", "2024-03-06"))
        rule = parse_rule("FREQ=MONTHLY;BYMONTHDAY=31;COUNT=2")
        self.assertEqual(occurrences(rule, D("2024-02-01"), D("2030-01-01")), days("2024-02-29", "2024-03-31"))
        with self.assertRaises(ValueError):
            occurrences(parse_rule("FREQ=WEEKLY"), D("2024-01-01"))

    def test_rule_validation(self):
        for bad in ("FREQ=DAILY;INTERVAL=0", "FREQ=DAILY;INTERVAL=-1", "FREQ=DAILY;INTERVAL=x",
                    "FREQ=MONTHLY;BYMONTHDAY=32", "FREQ=MONTHLY;BYMONTHDAY=0", "FREQ=DAILY;COUNT=0",
                    "FREQ=DAILY;BYDAY=MO", "FREQ=WEEKLY;BYMONTHDAY=3", "FREQ=MONTHLY;BYDAY=FR"):
            with self.assertRaises(ValueError, msg=bad):
                parse_rule(bad)

    def test_next_occurrence(self):
        rule = parse_rule("FREQ=MONTHLY;BYMONTHDAY=31")
        self.assertEqual(next_occurrence(rule, D("2024-01-01"), D("2024-01-31")), D("2024-02-29"))
        self.assertEqual(next_occurrence(rule, D("2024-01-01"), D("2031-05-01")), D("2031-05-31"))
        rule = parse_rule("FREQ=WEEKLY;BYDAY=TH,MO;COUNT=3")
        self.assertEqual(next_occurrence(rule, D("2024-03-05"), D("2024-03-01")), D("2024-03-07"))
        self.assertEqual(next_occurrence(rule, D("2024-03-05"), D("2024-03-11")), D("2024-03-14"))
        self.assertIsNone(next_occurrence(rule, D("2024-03-05"), D("2024-03-14")))

    def test_agenda_merges_and_counts_from_each_first_date(self):
        events = [
            ("standup", "FREQ=WEEKLY;BYDAY=TU,MO", D("2024-02-26")),
            ("rent", "FREQ=MONTHLY;BYMONTHDAY=31", D("2024-01-31")),
            ("course", "FREQ=WEEKLY;BYDAY=FR;COUNT=2", D("2024-02-20")),
            ("alpha", "FREQ=DAILY;INTERVAL=7", D("2024-02-26")),
        ]
        self.assertEqual(agenda(events, D("2024-02-29"), D("2024-03-05")), [
            (D("2024-02-29"), "rent"),
            (D("2024-03-01"), "course"),
            (D("2024-03-04"), "alpha"),
            (D("2024-03-04"), "standup"),
            (D("2024-03-05"), "standup"),
        ])


if __name__ == "__main__":
    unittest.main()
