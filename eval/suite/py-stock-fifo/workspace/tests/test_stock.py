import unittest

from stock.ledger import Warehouse
from stock.reorder import reorder_report


class StockTest(unittest.TestCase):
    def test_receive_and_value(self):
        w = Warehouse("north")
        w.receive("TEA", 10, 200)
        w.receive("TEA", 5, 300)
        self.assertEqual(w.on_hand("TEA"), 15)
        self.assertEqual(w.value("TEA"), 3500)

    def test_sale_within_one_batch(self):
        w = Warehouse("north")
        w.receive("TEA", 10, 200)
        self.assertEqual(w.sell("TEA", 4), 800)
        self.assertEqual(w.on_hand("TEA"), 6)

    def test_sale_across_batches(self):
        w = Warehouse("north")
        w.receive("TEA", 3, 100)
        w.receive("TEA", 3, 200)
        w.receive("TEA", 3, 400)
        self.assertEqual(w.sell("TEA", 7), 3 * 100 + 3 * 200 + 1 * 400)
        self.assertEqual(w.on_hand("TEA"), 2)
        self.assertEqual(w.value("TEA"), 800)

    def test_new_warehouse_has_no_history(self):
        Warehouse("north").receive("TEA", 1, 100)
        self.assertEqual(Warehouse("south").moves, [])

    def test_reorder(self):
        w = Warehouse("north")
        w.receive("TEA", 2, 100)
        self.assertEqual(reorder_report(w, {"TEA": (5, 20), "MUG": (1, 4)}), ["TEA: order 18", "MUG: order 4"])


if __name__ == "__main__":
    unittest.main()
