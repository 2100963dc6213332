"""Running the instance: housekeeping and retention sweeps, health, instance information.
May import: ``threads``, ``access``.
"""
