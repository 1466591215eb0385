"""The workflows REST views: thin adapters over ``workflows.services``. Must not hold rules or
write rows themselves.
"""
