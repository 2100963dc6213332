"""Writes (services) and reads that check access (selectors), one module per concept."""
