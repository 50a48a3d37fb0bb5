import unittest

from books.accounts import Account, InsufficientFunds
from books.transfers import transfer


class BooksTest(unittest.TestCase):
    def test_transfer_same_currency(self):
        a, b = Account("a", "EUR", 10.0), Account("b", "EUR")
        transfer(a, b, 4.0)
        self.assertEqual(b.balance, 4.0)

    def test_overdraw(self):
        with self.assertRaises(InsufficientFunds):
            Account("a", "EUR").withdraw(1.0)


if __name__ == "__main__":
    unittest.main()
