"""Env values and secrets: writes at every scope, key rotation, and redaction of a thread's
secret values for the layers outside the engine. Imports no other service package.
"""
