"""The app's ground floor: small modules every layer may import (errors, encryption,
permissions, telemetry, the periodic job table, code registries …). They import nothing of
``agents_app`` themselves, so nothing above can make a circle through them.
"""
