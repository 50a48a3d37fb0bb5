import unittest

from books.accounts import Account, InsufficientFunds
from books.money import CurrencyMismatch, Money, convert
from books.report import summary
from books.transfers import transfer


def eur(t):
    return Money.parse(t, "EUR")


class MoneyTest(unittest.TestCase):
    def test_parse_and_minor_units(self):
        self.assertEqual(eur("12.34").minor, 1234)
        self.assertEqual(eur("12.34").currency, "EUR")
        self.assertEqual(Money.parse("500", "JPY").minor, 500)
        with self.assertRaises(ValueError):
            eur("1.234")
        with self.assertRaises(ValueError):
            Money.parse("1.5", "JPY")

    def test_exact_arithmetic(self):
        total = Money.zero("EUR")
        for _ in range(10):
            total = total + eur("0.10")
        self.assertEqual(total, eur("1.00"))
        self.assertEqual(eur("0.1") + eur("0.2"), eur("0.3"))
        self.assertEqual((eur("5") - eur("7.5")).minor, -250)

    def test_currency_mismatch(self):
        with self.assertRaises(CurrencyMismatch):
            eur("1") + Money.parse("1", "USD")
        with self.assertRaises(CurrencyMismatch):
            eur("1") < Money.parse("1", "USD")

    def test_immutable_and_hashable(self):
        m = eur("1")
        with self.assertRaises(Exception):
            m.minor = 5
        self.assertEqual(len({eur("1"), eur("1.00")}), 1)

    def test_format(self):
        self.assertEqual(eur("1234.5").format(), "EUR 1,234.50")
        self.assertEqual(eur("-5").format(), "-EUR 5.00")
        self.assertEqual(Money.parse("1234567", "JPY").format(), "JPY 1,234,567")

    def test_convert_rounds_half_even(self):
        self.assertEqual(convert(eur("0.25"), "USD", "0.5"), Money(12, "USD"))
        self.assertEqual(convert(eur("0.35"), "USD", "0.5"), Money(18, "USD"))
        self.assertEqual(convert(eur("10"), "JPY", "161.235"), Money(1612, "JPY"))


class AccountsTest(unittest.TestCase):
    def test_transfer_converts_with_a_rate(self):
        a = Account("a", "EUR", eur("100"))
        b = Account("b", "USD")
        transfer(a, b, eur("10.01"), rate="1.0825")
        self.assertEqual(a.balance, eur("89.99"))
        self.assertEqual(b.balance, Money(1084, "USD"))

    def test_rate_needed_between_currencies(self):
        with self.assertRaises(ValueError):
            transfer(Account("a", "EUR", eur("1")), Account("b", "USD"), eur("1"))

    def test_overdraw_leaves_both_balances(self):
        a, b = Account("a", "EUR", eur("3")), Account("b", "EUR")
        with self.assertRaises(InsufficientFunds):
            transfer(a, b, eur("3.01"))
        self.assertEqual((a.balance, b.balance), (eur("3"), eur("0")))

    def test_summary_formats_and_totals_per_currency_sorted(self):
        accs = [Account("x", "USD", Money.parse("1000", "USD")), Account("y", "EUR", eur("0.1")), Account("z", "EUR", eur("0.2"))]
        self.assertEqual(
            summary(accs),
            ["x: USD 1,000.00", "y: EUR 0.10", "z: EUR 0.20", "total EUR 0.30", "total USD 1,000.00"],
        )


if __name__ == "__main__":
    unittest.main()
