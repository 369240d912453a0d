"""The limits behind a `noisy` verdict from contention (timing/contention.py) and the run's notice."""

# A result is disturbed when others took more than a quarter of a core on average while the
# cores were nearly full (under half a core idle) or our own threads had to queue for a CPU:
# on a 2-core machine that is ~12% of the capacity, more than the ±5% target the quick rigor
# asks for. A neighbour on an otherwise idle core (a big machine) is recorded but not counted.
OTHERS_CORES_LIMIT = 0.25
IDLE_CORES_SPARE = 0.5
RUN_WAIT_LIMIT = 0.02      # our threads spent >= 2% of their runnable time waiting for a CPU
STEAL_LIMIT = 0.05         # the hypervisor took >= 5% of our cores' time
MAX_UNCERTAINTY_CORES = 0.1  # tick rounding may move the figures by at most a tenth of a core
# a window too short for ticks is judged on our threads' wait alone: an idle machine leaves them
# waiting ~0-2% of the time, another process on their core tens of percent
SHORT_WINDOW_WAIT_LIMIT = 0.10
# our own threads filled the cores when they used >= 90% of them and others next to nothing
# (a tenth of a core is tick rounding): a wait is then our own doing. It is still judged on the
# wait alone, at the short-window limit, since our threads' own stacking slows the timed one too
OWN_FULL_SHARE = 0.9
OTHERS_NEGLIGIBLE_CORES = 0.1
