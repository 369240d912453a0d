"""Deep-learning workloads (issue #5): the models of the seeds, in PyTorch."""
