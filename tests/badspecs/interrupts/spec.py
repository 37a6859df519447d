"""Raises KeyboardInterrupt at import, as if Ctrl-C were pressed: gpubench must report the
file as a broken spec (exit 4), not stop as if the user had interrupted it (130)."""

raise KeyboardInterrupt
