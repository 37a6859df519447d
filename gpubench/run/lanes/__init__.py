"""The parent's side of its workers: a lane (one worker on one device), the worker
process handle, the protocol between them, process trees, early starts, TMPDIR."""
