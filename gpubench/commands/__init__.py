"""One module per command: what it does, between parsing (cli.py) and the machinery."""
