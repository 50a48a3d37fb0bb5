"""A small warehouse stock ledger: deliveries, sales and FIFO valuation."""
