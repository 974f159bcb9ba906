"""Reward functions used by tests to look inside a running job (real jobs, real Ray)."""
