"""`python -m gpubench` is the `gpubench` command."""

from gpubench.cli import main

if __name__ == "__main__":
    main()
