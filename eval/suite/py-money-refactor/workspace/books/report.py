def format_balance(account):
    return f"{account.currency} {account.balance:.2f}"


def summary(accounts):
    lines = [f"{a.name}: {format_balance(a)}" for a in accounts]
    totals = {}
    for a in accounts:
        totals[a.currency] = totals.get(a.currency, 0.0) + a.balance
    for cur, total in totals.items():
        lines.append(f"total {cur} {total:.2f}")
    return lines
