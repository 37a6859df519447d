"""One module per command: what it does, between parsing (cli/app.py) and the machinery."""
