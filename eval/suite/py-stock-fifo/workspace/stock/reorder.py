def reorder_report(warehouse, levels):
    """Lines "<sku>: order <n>" for each SKU whose stock is below its reorder level.

    levels maps sku -> (reorder_level, target); the order brings stock up to target.
    """
    lines = []
    for sku, (level, target) in levels.items():
        have = warehouse.on_hand(sku)
        if have < level:
            lines.append(f"{sku}: order {target - have}")
    return lines
