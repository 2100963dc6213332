"""Evals: datasets of cases and their checks, scores and comparisons, dataset files, version
pins and the words the studio shows. Running cases is ``orchestration.eval_runs``.
May import: ``definitions`` (pins name definition versions).
"""
