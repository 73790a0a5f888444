"""Helpers shared by tests (importable because tests/conftest.py puts tests/ on sys.path)."""
