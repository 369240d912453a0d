"""`accelbench check`: a bounded health check of every device (docs/health-check.md).

Modules: model (findings, statuses, exit codes), bounded (deadlines: threads for library calls,
child processes for framework work), cpu_config (quota, affinity, governor, turbo), cpu_hardware
(thermal throttling, EDAC, NUMA, DIMMs), cpu_perf (matmul and STREAM through the run command's
harness), expected (history, fleet median, datasheet, formula), nvml_health and gpu_checks (NVIDIA),
gpu_load (the GPU load step, a child process), amd_health (AMD), run (the whole check), render.
Importing this package imports nothing heavy; numpy and the GPU libraries load when a step runs.
"""
