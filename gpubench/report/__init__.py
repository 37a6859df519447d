"""Turning results into things people read: terminal tables, CSV and JSON files."""
