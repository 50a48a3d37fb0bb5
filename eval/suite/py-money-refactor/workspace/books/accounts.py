class InsufficientFunds(Exception):
    pass


class Account:
    def __init__(self, name, currency, balance=0.0):
        self.name = name
        self.currency = currency
        self.balance = balance

    def deposit(self, amount):
        self.balance += amount

    def withdraw(self, amount):
        if amount > self.balance:
            raise InsufficientFunds(f"{self.name}: {amount} > {self.balance}")
        self.balance -= amount
