"""The sandbox's limits: named constants, gathered in one ``Limits`` value a GradingHost applies.

CPU time is the primary limit (it does not depend on how busy the host is). The
wall-clock backstop only catches code that waits without computing (``sleep``, a
blocking read): past ``wall_s_backstop`` a cell fails only if it used less than
``IDLE_CPU_FRACTION`` of that wall time as CPU, so slow progress on a loaded machine is
never mistaken for waiting. ``WALL_S_HARD`` is the absolute end, whatever the CPU use.
"""

from __future__ import annotations

from dataclasses import dataclass

# one notebook cell, or one measuring request (a cold inductor compile of a model answer: ~16 s)
CPU_S_PER_CELL = 60
CPU_S_TOTAL = 600               # everything one run (one notebook, one measuring child) may use
WALL_BACKSTOP_FACTOR = 3        # wall-clock backstop of a cell = this many times its CPU budget
IDLE_CPU_FRACTION = 0.05        # below this CPU/wall ratio past the backstop, the code is waiting
WALL_S_HARD = 3600.0            # no cell or measurement runs longer than this, however busy the host
WALL_S_PER_RUN = 300.0          # a whole notebook run (all its cells), however its time is spread over cells
MEMORY_BYTES = 4 << 30          # resident memory of a run (cgroup); torch itself takes ~0.4 GB
ADDRESS_SPACE_BYTES = 16 << 30  # RLIMIT_AS, only when no memory cgroup is available (torch maps a lot)
PIDS = 128                      # processes and threads of a run (cgroup pids.max); inductor's C++ build needs a few
OUTPUT_BYTES_PER_CELL = 64 << 10    # printed text kept per cell; the rest is counted and dropped
OUTPUT_BYTES_PER_RUN = 8 << 20      # raw bytes written to the process's stdout/stderr descriptors; beyond: fault
FILE_BYTES = 256 << 20          # RLIMIT_FSIZE: the largest file a run may write
OPEN_FILES = 256                # RLIMIT_NOFILE
TORCH_THREADS = 1               # intra-op threads in a child (graders run several children at once)


@dataclass(frozen=True)
class Limits:
    cpu_s_per_cell: int = CPU_S_PER_CELL
    cpu_s_total: int = CPU_S_TOTAL
    wall_s_backstop: float = CPU_S_PER_CELL * WALL_BACKSTOP_FACTOR   # per cell / per measuring request
    idle_cpu_fraction: float = IDLE_CPU_FRACTION
    wall_s_hard: float = WALL_S_HARD
    wall_s_per_run: float = WALL_S_PER_RUN
    memory_bytes: int = MEMORY_BYTES
    pids: int = PIDS
    output_bytes: int = OUTPUT_BYTES_PER_CELL
    output_bytes_per_run: int = OUTPUT_BYTES_PER_RUN
    file_bytes: int = FILE_BYTES
    open_files: int = OPEN_FILES
    address_space_bytes: int = ADDRESS_SPACE_BYTES
    torch_threads: int = TORCH_THREADS

    @classmethod
    def scaled(cls, cpu_s_per_cell: int, **overrides) -> Limits:
        """Limits with a different CPU budget per cell and the wall backstop that goes with it."""
        overrides.setdefault("wall_s_backstop", cpu_s_per_cell * WALL_BACKSTOP_FACTOR)
        overrides.setdefault("cpu_s_total", max(cpu_s_per_cell, CPU_S_TOTAL))
        return cls(cpu_s_per_cell=cpu_s_per_cell, **overrides)
