"""The workflows REST views: thin adapters over ``workflows.services``."""
