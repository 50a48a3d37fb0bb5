from stock.batches import Batch, consume


class Warehouse:
    """Stock per SKU as FIFO batches, plus the list of every move made."""

    def __init__(self, name, moves=[]):
        self.name = name
        self.moves = moves
        self.batches = {}

    def receive(self, sku, qty, unit_cost_cents):
        self.batches.setdefault(sku, []).append(Batch(qty, unit_cost_cents))
        self.moves.append(("in", sku, qty))

    def sell(self, sku, qty):
        """Removes qty units of sku (oldest first) and returns their cost of goods sold."""
        batches = self.batches.get(sku, [])
        cost = consume(batches, qty)
        self.moves.append(("out", sku, qty))
        return cost

    def on_hand(self, sku):
        return sum(b.qty for b in self.batches.get(sku, []))

    def value(self, sku=None):
        skus = [sku] if sku else list(self.batches)
        return sum(b.value() for s in skus for b in self.batches.get(s, []))
