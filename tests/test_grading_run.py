"""The grading kernel's limits and sandbox, with real kernels (a few seconds each)."""

import os

from compile_course.grading.assemble import RunCell
from compile_course.grading.run import Limits, run_cells


def cells(*codes):
    return [RunCell(i, f"cell {i}", code, "student") for i, code in enumerate(codes)]


def test_sandbox_hides_files_drops_root_and_survives_os_exit(tmp_path):
    secret = tmp_path / "solutions"
    secret.mkdir()
    (secret / "hidden.txt").write_text("the hidden test")
    result = run_cells(cells(
        f"print(open({str(secret / 'hidden.txt')!r}).read())",
        "import os; print(os.getuid(), os.getcwd())",
        "import os; os._exit(3)",
        "print('never')"), Limits(cell_timeout=60), hide=[secret], uid=61099 if os.geteuid() == 0 else None)
    first, second, third, fourth = result.cells
    assert first.status == "error" and first.ename in ("FileNotFoundError", "PermissionError")
    if os.geteuid() == 0:
        assert second.stdout.split()[0] == "61099"
    assert third.status == "died" and "exit code 3" in result.fault and fourth.status == "not-run"


def test_infinite_loop_hits_the_cell_timeout():
    result = run_cells(cells("x = 1", "while True:\n    pass"), Limits(cell_timeout=4), hide=[], uid=None)
    assert [c.status for c in result.cells] == ["ok", "timeout"] and "time limit" in result.fault


def test_memory_cap_and_output_cap():
    result = run_cells(cells(
        "import torch\ntry:\n    torch.empty(50 * 2**30, dtype=torch.uint8)\nexcept RuntimeError as e:\n    print('refused')",
        "print('y' * 10**6)",
        "import os\nwhile True:\n    os.write(1, b'x' * 65536)"), Limits(cell_timeout=60, output_bytes=1 << 20, cell_output_chars=100), hide=[], uid=None)
    alloc, printed, flood = result.cells
    assert alloc.stdout.strip() == "refused"
    assert printed.status == "ok" and len(printed.stdout) == 100
    assert flood.status == "died" and "output limit" in result.fault
