"""Run accelbench on a Slurm cluster: one batch job per node, partition or GPU type.

`accelbench submit` writes a batch script per target and hands it to `sbatch --parsable`; each job
runs `python -m accelbench run` into a job-local SQLite file and exports it as JSON into a shared
results folder, next to its logs and a manifest of every job submitted there. `accelbench gather`
reads the manifest, asks Slurm (squeue, then scontrol; no sacct) what became of each job, and
imports every finished job's export into the local database, tagged with node, job id and
partition. Standard library only; Slurm's commands are run as subprocesses.

Modules: states (Slurm job states, squeue/scontrol parsing, what files say once Slurm forgot),
targets (the job matrix), nodes (the cluster's nodes: `submit --each-node`'s choice, down and
drained ones), script (the batch script), manifest (the JSON job list), slurm (sbatch, queries,
waiting), gather (states + one-transaction imports into the store), outliers (the robust rule
that finds slow nodes), fleet (`accelbench fleet`: per node type, each node beside its type's
median), fleet_html (its page) and check_sweep (`submit --each-node check`: each node's health
check verdict and failing checks in one table).
"""

DEFAULT_RESULTS_DIR = "accelbench-results"   # the shared folder `submit` writes and `gather` reads
DEFAULT_WAIT_TIMEOUT_S = 3600.0              # how long `submit --wait` and `gather --wait` wait
