"""compile_course.scripts: a lesson's script runs as `python script.py`, under the course's stderr policy."""

from compile_course.scripts import run_script

SCRIPT = """
import logging, sys, traceback
logging.basicConfig(stream=sys.stderr, format="%(name)s: %(message)s")
logging.getLogger("torch.utils.cpp_extension").warning("No CUDA runtime is found")   # the policy's one notice
logging.getLogger("torch._dynamo").warning("a diagnostic")                          # kept
print("printed")
traceback.print_stack()
"""


def test_the_cuda_notice_is_silenced_and_everything_else_kept_in_order():
    folder, out = run_script(SCRIPT, COURSE_TEST_VAR="1")
    assert "No CUDA runtime" not in out
    assert out.index("torch._dynamo: a diagnostic") < out.index("printed")
    assert (folder / "script.py").is_file()


def test_the_stack_is_the_scripts_own():
    _, out = run_script(SCRIPT)
    frames = [line for line in out.splitlines() if line.strip().startswith("File ")]
    assert len(frames) == 1 and "script.py" in frames[0], out
