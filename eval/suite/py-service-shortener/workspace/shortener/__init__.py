"""A small URL shortener service (standard library only)."""
