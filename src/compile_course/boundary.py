"""Record the version boundary a result was obtained under.

A claim about torch.compile holds for one torch release, one backend and one
set of settings. ``VersionBoundary`` collects them in one record.

- ``stable`` fields (torch release, backend, the settings that decide capture
  and reuse, the input contract) are what a reader compares. They name the
  public release only (``2.14.1``): the wheel's local version (``+cu130``,
  ``+cpu``) and CUDA fields say which wheel was installed, not how the
  compiler behaves on CPU, so they are volatile.
- ``volatile`` fields (the wheel, host, CPU count, patch-level Python) differ
  from machine to machine, so notebooks print them in a cell that nbval does
  not compare.

What it does not record: environment variables other than the inductor cache
directory, and config options the lessons do not touch.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field

import torch
import torch._dynamo.config as dynamo_config
import torch._inductor.config as inductor_config


def torch_release() -> str:
    """``torch.__version__`` without the wheel's local version (``2.14.1+cu130`` -> ``2.14.1``)."""
    return torch.__version__.split("+")[0]


def _table(rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


@dataclass
class VersionBoundary:
    backend: str = "eager"
    mode: str | None = None
    fullgraph: bool = False
    dynamic: bool | None = None
    inputs: str = "-"
    diagnostics: list[str] = field(default_factory=list)

    def scalar_capture(self) -> str:
        """Whether ``.item()`` is captured: the config, or ``fullgraph=True``, which turns it on."""
        if dynamo_config.capture_scalar_outputs:
            return "True"
        return "True (fullgraph=True turns it on)" if self.fullgraph else "False"

    def stable(self) -> list[tuple[str, str]]:
        return [
            ("torch", torch_release()),
            ("python", f"{sys.version_info.major}.{sys.version_info.minor}"),
            ("device", "cpu"),
            ("backend", self.backend),
            ("mode", str(self.mode)),
            ("fullgraph", str(self.fullgraph)),
            ("dynamic", str(self.dynamic)),
            ("recompile_limit", str(dynamo_config.recompile_limit)),
            ("automatic_dynamic_shapes", str(dynamo_config.automatic_dynamic_shapes)),
            ("specialize_float", str(getattr(dynamo_config, "specialize_float", "n/a"))),  # absent in old releases
            ("capture_scalar_outputs", self.scalar_capture()),
            ("inductor fx_graph_cache", str(inductor_config.fx_graph_cache)),
            ("default dtype", str(torch.get_default_dtype()).replace("torch.", "")),
            ("deterministic algorithms", str(torch.are_deterministic_algorithms_enabled())),
            ("input contract", self.inputs),
            ("diagnostics used", ", ".join(self.diagnostics) or "-"),
        ]

    def volatile(self) -> list[tuple[str, str]]:
        return [
            ("torch wheel", torch.__version__),
            ("torch commit", (torch.version.git_version or "?")[:12]),
            ("CUDA build / available", f"{torch.version.cuda or 'none'} / {torch.cuda.is_available()}"),
            ("python (full)", platform.python_version()),
            ("platform", platform.platform()),
            ("machine", platform.machine()),
            ("cpu count", str(os.cpu_count())),
            ("torch threads", str(torch.get_num_threads())),
            ("inductor cache dir", os.environ.get("TORCHINDUCTOR_CACHE_DIR", "(default)")),
        ]

    def stable_table(self) -> str:
        """The compared record, compact: one line a group of related fields."""
        s = dict(self.stable())
        keys = lambda *names: "  ".join(f"{n.replace(' ', '_')}={s[n]}" for n in names)  # noqa: E731
        return _table([
            ("torch", f"{s['torch']} | python {s['python']} | {s['device']}"),
            ("compile", keys("backend", "mode", "fullgraph", "dynamic")),
            ("dynamo", keys("recompile_limit", "automatic_dynamic_shapes", "specialize_float")),
            ("", keys("capture_scalar_outputs")),
            ("inductor", keys("inductor fx_graph_cache").replace("inductor_", "")),
            ("numerics", keys("default dtype", "deterministic algorithms")),
            ("inputs", s["input contract"]),
            ("evidence", s["diagnostics used"]),
        ])

    def volatile_table(self) -> str:
        return _table(self.volatile())

    def __str__(self) -> str:
        return self.stable_table()

    def as_dict(self) -> dict[str, str]:
        return dict(self.stable() + self.volatile())
