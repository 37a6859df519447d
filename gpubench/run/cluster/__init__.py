"""Points on Dask workers (`run --cluster`): lanes over a cluster, a local cluster,
remote workers, and one started while the run plans."""
