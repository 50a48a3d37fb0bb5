import unittest

from stock.ledger import OutOfStock, Warehouse
from stock.transfer import transfer


def stocked(name, *deliveries, sku="CUP"):
    w = Warehouse(name)
    for qty, cost in deliveries:
        w.receive(sku, qty, cost)
    return w


class FifoHiddenTest(unittest.TestCase):
    def test_cost_of_goods_over_many_batches(self):
        w = stocked("h1", (4, 150), (1, 999), (6, 210), (2, 50))
        self.assertEqual(w.sell("CUP", 9), 4 * 150 + 999 + 4 * 210)
        self.assertEqual(w.on_hand("CUP"), 4)
        self.assertEqual(w.value("CUP"), 2 * 210 + 2 * 50)
        self.assertEqual(w.sell("CUP", 2), 420)
        self.assertEqual(w.sell("CUP", 2), 100)
        self.assertEqual(w.on_hand("CUP"), 0)

    def test_exact_batch_boundary(self):
        w = stocked("h2", (3, 100), (3, 200))
        self.assertEqual(w.sell("CUP", 3), 300)
        self.assertEqual(w.sell("CUP", 1), 200)
        self.assertEqual(w.value(), 400)

    def test_warehouses_do_not_share_moves(self):
        first = stocked("h3", (1, 10))
        second = Warehouse("h4")
        third = Warehouse("h5")
        second.receive("CUP", 2, 10)
        self.assertEqual(third.moves, [])
        self.assertEqual(first.moves, [("in", "CUP", 1)])
        self.assertEqual(second.moves, [("in", "CUP", 2)])

    def test_overselling_raises_and_changes_nothing(self):
        w = stocked("h6", (2, 100), (1, 500))
        with self.assertRaises(OutOfStock):
            w.sell("CUP", 4)
        with self.assertRaises(OutOfStock):
            w.sell("NOPE", 1)
        self.assertEqual(w.on_hand("CUP"), 3)
        self.assertEqual(w.value("CUP"), 700)
        self.assertEqual(len(w.moves), 2)

    def test_quantities_must_be_positive_integers(self):
        w = stocked("h7", (5, 100))
        for bad in (0, -2, 1.5, "3"):
            with self.assertRaises(ValueError, msg=repr(bad)):
                w.sell("CUP", bad)
            with self.assertRaises(ValueError, msg=repr(bad)):
                w.receive("CUP", bad, 100)
        self.assertEqual(w.on_hand("CUP"), 5)

    def test_transfer_moves_units_with_their_costs(self):
        src = stocked("h8", (2, 100), (5, 300))
        dst = stocked("h9", (1, 700))
        self.assertEqual(transfer(src, dst, "CUP", 4), 2 * 100 + 2 * 300)
        self.assertEqual(src.on_hand("CUP"), 3)
        self.assertEqual(src.value("CUP"), 900)
        self.assertEqual(dst.on_hand("CUP"), 5)
        # dst sells its own older unit first, then the transferred ones in the order they were taken
        self.assertEqual(dst.sell("CUP", 2), 700 + 100)
        self.assertEqual(dst.sell("CUP", 3), 100 + 2 * 300)
        self.assertEqual(src.moves[-1], ("out", "CUP", 4))
        self.assertEqual(dst.moves[1], ("in", "CUP", 4))

    def test_failed_transfer_changes_neither_warehouse(self):
        src = stocked("h10", (2, 100))
        dst = Warehouse("h11")
        with self.assertRaises(OutOfStock):
            transfer(src, dst, "CUP", 3)
        self.assertEqual((src.on_hand("CUP"), dst.on_hand("CUP")), (2, 0))
        self.assertEqual((len(src.moves), dst.moves), (1, []))


if __name__ == "__main__":
    unittest.main()
