"""The store: the files a run leaves and the indexes over them. A layer of its own, below
run/ and above report/, so that `history`, `compare`, `report` and `runs` read past runs
without importing anything that runs one.
  results_file   results.json and results.csv named, and a run document read back
  run_index      the index of run folders (`latest`, `gpubench runs`), in the user's cache
  history_store  every recorded run's rows in one SQLite file (`gpubench history`)
  folder         the folder a run writes to: claimed, saved into, rescued; 'latest' resolved
  chart_files    a report's charts as SVG or PNG files
  report_page    a run's HTML page written beside its results

Imports run one way, bottom to top: results_file <- run_index <- history_store <- folder,
and chart_files <- report_page.
"""
