"""gpubench's version, in one place: pyproject.toml reads it (without importing gpubench),
`gpubench --version` prints it and every results.json records it. Semantic versioning:
CHANGELOG.md says what each release changed for users."""

__version__ = "0.2.0"
