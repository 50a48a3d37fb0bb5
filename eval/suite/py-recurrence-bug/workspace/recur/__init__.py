"""Recurring events: a small subset of iCalendar RRULEs, expanded to dates."""
