"""Exports tables (lists of dicts) as CSV, JSON or Markdown."""
