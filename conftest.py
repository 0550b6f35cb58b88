"""Root pytest configuration: what `pytest --nbval` collects and what it leaves alone."""

# Exercise notebooks are unanswered by design, and the sample submissions are
# graded by the grader's tests, so nbval must not execute them.
collect_ignore = ["exercises", "build", ".venv", "scripts"]
collect_ignore_glob = ["tests/samples/*", "tests/fixtures/*"]

# Timing cells (volatile, never compared) sample for a tenth of their time under test; the
# kernels nbval starts inherit this (compile_course.timing.measure reads it).
import os  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

os.environ.setdefault("COURSE_TIMING_SCALE", "0.1")
# the pid of the pytest process whose run's ordinary user its xdist workers share (tests/ordinary_user.py)
RUN_USER_ENV = "COURSE_TEST_USER_RUN"


def pytest_configure(config):
    """Kernels for the notebooks come from a warm template (course_tools.warm_kernels).

    --nbval-current-env (pyproject's addopts) names this Python's ipykernel; the warm kernel spec
    is that same kernel, forked from a process that has already imported torch. A launch that does
    not fit the template starts an ordinary kernel. COURSE_WARM_KERNELS=0 turns it off.
    """
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_WorkerCounts())
    if not hasattr(config, "workerinput"):   # the run's process: its xdist workers share one ordinary user
        os.environ.setdefault(RUN_USER_ENV, str(os.getpid()))
    if os.environ.get("COURSE_WARM_KERNELS", "1") == "0":
        return
    import tempfile

    from course_tools.warm_kernels.kernelspec import write_kernelspec

    folder = tempfile.mkdtemp(prefix="course-kernelspec-")
    name = write_kernelspec(Path(folder))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (folder, os.environ.get("JUPYTER_PATH")) if p)
    config.course_kernel_folder, config.course_kernel = folder, name
    if getattr(config.option, "nbval_current_env", False):
        config.option.nbval_current_env = False
        config.option.nbval_kernel_name = name


def pytest_unconfigure(config):
    import shutil

    folder = getattr(config, "course_kernel_folder", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
    if not hasattr(config, "workerinput") and os.environ.get(RUN_USER_ENV) == str(os.getpid()):
        _remove_run_user()


def _remove_run_user() -> None:
    """The ordinary user this run's workers shared (tests/ordinary_user.py), with its ACL entries, if one was made."""
    import pwd
    import sys

    try:
        pwd.getpwnam(f"course-st-{os.getpid()}")
    except KeyError:
        return
    sys.path.insert(0, str(Path(__file__).parent / "tests"))
    from ordinary_user import remove_run_user

    remove_run_user()


@pytest.fixture(autouse=True, scope="module")
def _environment_restored():
    """No test module leaks changes of os.environ into the modules after it in the same worker.

    Some leak by design of what they run: a Dask LocalCluster sets OMP_NUM_THREADS=1 and other
    variables in its parent process, and an in-process inductor compile sets a pointer variable
    for its C++ loader. Kernels inherit the environment, so a notebook would otherwise run with
    one thread or not depending on which test file ran before it in its worker.
    """
    saved = dict(os.environ)
    yield
    for key in set(os.environ) - set(saved) - {"PYTEST_CURRENT_TEST"}:
        del os.environ[key]
    os.environ.update({k: v for k, v in saved.items() if k != "PYTEST_CURRENT_TEST"})


@pytest.fixture(scope="session")
def kernel_name(pytestconfig) -> str:
    """The kernel spec tests that run notebooks should use: the warm one when it is on."""
    return getattr(pytestconfig, "course_kernel", "python3")


# How many kernels were forked from the template, and why the others started ordinarily:
# printed at the end of the run, summed over the xdist workers.
_launches: dict[str, int] = {}


def _count(counts: dict[str, int]) -> None:
    for kind, n in counts.items():
        _launches[kind] = _launches.get(kind, 0) + n


def pytest_sessionfinish(session):
    import sys

    module = sys.modules.get("course_tools.warm_kernels.provisioner")
    counts = dict(module.launches) if module else {}
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["warm_kernels"] = counts
    else:
        _count(counts)


class _WorkerCounts:
    """xdist's hook, registered only when xdist is loaded (pytest rejects unknown hooks)."""

    @staticmethod
    def pytest_testnodedown(node, error):
        _count(getattr(node, "workeroutput", {}).get("warm_kernels", {}))


def pytest_terminal_summary(terminalreporter, config):
    if getattr(config, "course_kernel", None) and _launches:
        ordinary = {why: n for why, n in _launches.items() if why != "forked"}
        terminalreporter.write_line(f"notebook kernels: {_launches.get('forked', 0)} forked from the warm template, "
                                    f"{sum(ordinary.values())} started ordinarily")
        for why, n in sorted(ordinary.items()):
            terminalreporter.write_line(f"  {n} ordinary: {why}")


@pytest.fixture(scope="session")
def seed_compiled_kernels():
    """``seed(folder)``: a copy of this machine's inductor cache (compiled C++:
    kernels and inductor's ISA probes; none of its compiled graphs) into a new cache ``folder``.

    A test that needs an FX graph cache miss in a fresh cache folder then pays for the miss, not for
    five g++ ISA probes and their dlopen checks (~5 CPU-s) again. The folder still misses every graph;
    with an empty default cache (a new machine) it is simply cold all through, as before.
    """
    from course_grader.pipeline.cache_store import seed_compiled_kernels

    def seed(folder):
        folder.mkdir(parents=True, exist_ok=True)
        seed_compiled_kernels(folder)   # writable by any uid, as a grader's warming run leaves them
        return folder

    return seed
