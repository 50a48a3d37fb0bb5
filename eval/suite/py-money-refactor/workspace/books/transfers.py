def transfer(src, dst, amount, rate=None):
    """Moves amount (in src's currency) to dst; rate converts src -> dst when they differ."""
    if src.currency != dst.currency and rate is None:
        raise ValueError("a rate is needed between different currencies")
    src.withdraw(amount)
    dst.deposit(amount * rate if rate is not None else amount)
