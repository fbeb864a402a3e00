"""Leaf utilities: nothing here imports the rest of the package."""
