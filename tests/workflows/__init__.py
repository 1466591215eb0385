"""Tests of workflows: gap rules, reports, scheduling after edits, diagrams and pages. Must not
import ``bench``.
"""
