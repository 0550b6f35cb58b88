"""``compile_course.api_modules``: the test API's modules by name, for the kernel side and the grader's scans."""

import subprocess
import sys

from compile_course import measurement
from compile_course.api_modules import TEST_API_PACKAGES, is_test_api_module


def test_every_module_of_the_test_api_is_named():
    for name in ("compile_course.testing", "compile_course.stopwatch", "compile_course.primitives",
                 *measurement.MODULES):
        assert is_test_api_module(name), name
    for name in ("compile_course", "compile_course.comparison", "compile_course.testingx", "torch", ""):
        assert not is_test_api_module(name), name


def test_the_list_loads_without_torch():
    done = subprocess.run([sys.executable, "-c", "import sys, compile_course.api_modules, course_grader.intake.scan, "
                           "course_grader.verdict.shipping; print('torch' in sys.modules)"],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr


def test_a_setup_that_imports_the_measurement_package_names_test_api():
    from course_grader.verdict.shipping import test_api_names

    setup = ["from compile_course.measurement.spy import make_spied_call\n"
             "from compile_course import measurement as m\n"
             "import compile_course.stopwatch as sw\n"
             "helper = make_spied_call\n"]
    assert {"make_spied_call", "m", "sw", "helper"} <= test_api_names(setup)
    assert "compile_course.measurement" in TEST_API_PACKAGES
