"""Run folders: claimed, saved, loaded; the index of runs; chart files and the
report page written into them."""
