"""The data every other part builds on: shapes, point keys, tasks, measurements, results
and run documents. Pure: no GPU, no subprocess, no terminal; each type is built once
and passed along (CLI -> plan -> worker -> results -> files -> load_run)."""
