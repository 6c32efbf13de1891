"""Mutation checks: plant defects in every checker's input and show that each checker rejects them.

``mutation.operators`` names the defect classes, ``mutation.lean_batch`` folds the Lean mutants into
few kernel runs, ``mutation.campaign`` runs everything on scratch copies and ``mutation.report``
scores it (terminal table and Stryker's mutation-testing-report-schema JSON).
"""
