"""Never finishes importing: gpubench must give up and name the file."""
while True:
    pass
