"""The next step a ``course grade`` subcommand names when it is done: one function each, every one
run by a test exactly as printed (tests/exchange/test_loop.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

HAND_BACK_SUFFIX = "-hand-back"   # `course grade hand-back OUT` writes OUT-hand-back; `course return` reads it


def after_hand_back(out: Path, to: Path) -> str:
    """After ``course grade hand-back OUT --to TO``: on a hub, ``course return`` gives each student their
    folder and score. Its course defaults to the one the instructor teaches; its grades file is found
    beside ``TO`` only when ``TO`` is ``OUT-hand-back``, so the hint names it otherwise."""
    grades = Path(out) / "lms" / "grades.csv"
    step = f"course return {shlex.quote(str(to))}"
    beside = Path(to).name.endswith(HAND_BACK_SUFFIX) and \
        Path(to).with_name(Path(to).name.removesuffix(HAND_BACK_SUFFIX)).resolve() / "lms" / "grades.csv" \
        == grades.resolve()
    if not beside:
        step += f" --grades {shlex.quote(str(grades))}"
    return f"next, on the class's hub (each student gets their folder and score): {step}"
