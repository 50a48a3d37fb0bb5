class Batch:
    """A delivery still (partly) on the shelf: qty units bought at unit_cost_cents each."""

    def __init__(self, qty, unit_cost_cents):
        self.qty = qty
        self.unit_cost_cents = unit_cost_cents

    def value(self):
        return self.qty * self.unit_cost_cents


def consume(batches, qty):
    """Takes qty units from the oldest batches first; returns the cost of the units taken."""
    cost = 0
    remaining = qty
    i = 0
    while remaining > 0 and i < len(batches):
        b = batches[i]
        if b.qty < remaining:
            cost += b.value()
            b.qty = 0
            remaining -= b.qty
        else:
            cost += remaining * b.unit_cost_cents
            b.qty -= remaining
            remaining = 0
        i += 1
    return cost
