"""Record the version boundary a result was obtained under.

A claim about torch.compile holds for one torch build, one backend and one set
of settings. ``VersionBoundary`` collects them in one record. ``stable`` fields
(torch version, backend, settings, input contract) are what a reader compares;
``volatile`` fields (host, CPU count, patch-level Python) differ from machine to
machine, so notebooks print them in a cell that nbval does not compare.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field

import torch
import torch._dynamo.config as dynamo_config
import torch._inductor.config as inductor_config


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

    def stable(self) -> list[tuple[str, str]]:
        return [
            ("torch", torch.__version__),
            ("torch commit", (torch.version.git_version or "?")[:12]),
            ("CUDA build / available", f"{torch.version.cuda or 'none'} / {torch.cuda.is_available()}"),
            ("python", f"{sys.version_info.major}.{sys.version_info.minor}"),
            ("device", "cpu"),
            ("backend", self.backend),
            ("mode", str(self.mode)),
            ("fullgraph", str(self.fullgraph)),
            ("dynamic", str(self.dynamic)),
            ("recompile_limit", str(dynamo_config.recompile_limit)),
            ("automatic_dynamic_shapes", str(dynamo_config.automatic_dynamic_shapes)),
            ("capture_scalar_outputs", str(dynamo_config.capture_scalar_outputs)),
            ("inductor fx_graph_cache", str(inductor_config.fx_graph_cache)),
            ("default dtype", str(torch.get_default_dtype()).replace("torch.", "")),
            ("deterministic algorithms", str(torch.are_deterministic_algorithms_enabled())),
            ("input contract", self.inputs),
            ("diagnostics used", ", ".join(self.diagnostics) or "-"),
        ]

    def volatile(self) -> list[tuple[str, str]]:
        return [
            ("python (full)", platform.python_version()),
            ("platform", platform.platform()),
            ("machine", platform.machine()),
            ("cpu count", str(os.cpu_count())),
            ("torch threads", str(torch.get_num_threads())),
            ("inductor cache dir", os.environ.get("TORCHINDUCTOR_CACHE_DIR", "(default)")),
        ]

    def stable_table(self) -> str:
        return _table(self.stable())

    def volatile_table(self) -> str:
        return _table(self.volatile())

    def __str__(self) -> str:
        return self.stable_table()

    def as_dict(self) -> dict[str, str]:
        return dict(self.stable() + self.volatile())
