"""Statistics workloads (issue #6): the data-parallel computations of seed 000."""
