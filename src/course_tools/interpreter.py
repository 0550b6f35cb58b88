"""Which Python the course sets up on, checked before pip starts.

The Makefile runs this file by path (``$(PYTHON) src/course_tools/interpreter.py --venv .venv``)
with the interpreter it is about to build the venv from, before anything is installed, so it uses
the standard library only and imports nothing of the course. It refuses, naming what is missing
and how to get it, when

- the interpreter is not CPython 3.11.2 to 3.13.x (:data:`OLDEST`, :data:`BELOW`): 3.11.2 is
  Debian 12's own python3.11, 3.12 is Colab's; torch 2.14.1 has wheels for all three minors, and
  ``make lock`` resolves ``requirements.lock`` for the oldest release of each (:data:`LOCK_TARGETS`),
  so one lock serves them all. 3.14 is left out: no 3.14 interpreter was at hand to test it;
  3.13.0 is left out too (:data:`LEFT_OUT`): torch 2.14.1 warns on it that its guards run slower;
- it cannot make a venv with pip (Debian splits ``venv``/``ensurepip`` into python3.X-venv);
- its C headers are missing (inductor compiles its CPU kernels against ``Python.h``;
  Debian: python3.X-dev), or there is no C++ compiler;
- the venv exists and was made by another interpreter (another version or another installation):
  a venv is never reused across interpreters; ``make clean-venv`` removes it.

The file parses under any Python, 2.7 included (no f-strings, annotations or ``:=``), so that an old
interpreter is told it is out instead of failing with a SyntaxError.

``--describe`` prints the interpreter's identity in one line; the set-up writes it to the venv's
stamp (``.venv/.installed``), so the stamp says which Python the venv was built from.
"""

from __future__ import print_function

import argparse
import os
import platform
import shutil
import subprocess
import sys
import sysconfig

OLDEST = (3, 11, 2)
BELOW = (3, 14)
# the oldest release of each supported minor: a lock that resolves for these serves every later patch
LOCK_TARGETS = ("3.11.2", "3.12.0", "3.13.0")
SUPPORTED = "CPython 3.11.2 to 3.13 (3.13.1 or later)"
# releases inside the range that are still out, and why (said to whoever gives one)
LEFT_OUT = {
    (3, 13, 0): "torch 2.14.1 warns on every compile of this release that its guards run slower "
                "(\"Consider upgrading to Python 3.13.1+\"), and the lessons' stored outputs cannot match",
}
# how long asking another interpreter about itself may take (a Python start-up, on a busy machine)
ASK_TIMEOUT_S = 60
IDENTITY_CODE = ("import sys, platform; "
                 "print(platform.python_implementation(), platform.python_version(), sys.base_prefix)")


def identity():
    """This interpreter in one line: implementation, version and installation (``sys.base_prefix``,
    the same inside a venv as in the Python it was made from)."""
    return "{} {} {}".format(platform.python_implementation(), platform.python_version(), sys.base_prefix)


def version_problem(implementation, version):
    """Why this implementation and version (a tuple) are out, or None."""
    if implementation != "CPython":
        return "it is {}; the course needs {} (torch's wheels are CPython's)".format(implementation, SUPPORTED)
    if tuple(version[:3]) < OLDEST or tuple(version[:2]) >= BELOW:
        shown = ".".join(str(part) for part in version[:3])
        return "it is Python {}; the course supports {}".format(shown, SUPPORTED)
    if tuple(version[:3]) in LEFT_OUT:
        shown = ".".join(str(part) for part in version[:3])
        return "it is Python {}: {}; the course supports {}".format(shown, LEFT_OUT[tuple(version[:3])], SUPPORTED)
    return None


def problems():
    """What this interpreter lacks for the set-up, each with its fix; empty when it will do."""
    why = version_problem(platform.python_implementation(), tuple(sys.version_info[:3]))
    if why:
        return [why]   # the rest does not matter for a Python that is out (and may not even run below)
    import importlib.util

    found = []
    minor = "{}.{}".format(sys.version_info.major, sys.version_info.minor)
    if importlib.util.find_spec("venv") is None or importlib.util.find_spec("ensurepip") is None:
        found.append("it cannot make a virtual environment with pip (no venv/ensurepip module; on Debian or "
                     "Ubuntu: apt-get install python{}-venv)".format(minor))
    headers = os.path.join(sysconfig.get_path("include"), "Python.h")
    if not os.path.isfile(headers):
        found.append("its C headers are missing ({}; inductor compiles its kernels against them; on Debian or "
                     "Ubuntu: apt-get install python{}-dev)".format(headers, minor))
    compiler = os.environ.get("CXX") or "g++"
    if shutil.which(compiler) is None:
        found.append("no C++ compiler ({} not found; inductor builds C++ on CPU; on Debian or Ubuntu: "
                     "apt-get install g++)".format(compiler))
    return found


def ask(python):
    """``[implementation, version, base prefix]`` as ``python`` says them, or None when it does not run."""
    if sys.version_info < (3, 5):   # an interpreter this old is refused before it asks anyone
        return None
    try:   # stdout=PIPE, not capture_output: a 3.6 that is being refused still gets this far
        done = subprocess.run([python, "-c", IDENTITY_CODE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=ASK_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = done.stdout.strip().split(" ", 2)
    return parts if done.returncode == 0 and len(parts) == 3 else None


def others_on_path():
    """Supported interpreters found on PATH, as ``python3.12 (3.12.1)``, to suggest one."""
    found = []
    for minor in range(OLDEST[1], BELOW[1]):
        exe = shutil.which("python3.{}".format(minor)) if sys.version_info >= (3, 3) else None
        said = ask(exe) if exe else None
        if said and version_problem(said[0], tuple(int(p) for p in said[1].split(".")[:3] if p.isdigit())) is None:
            found.append("{} ({})".format(exe, said[1]))
    return found


def check(venv):
    """Every reason the set-up must not start with this interpreter and ``venv`` (a path); empty when it may."""
    me = "{} ({})".format(sys.executable, platform.python_version())
    refusals = ["{} will not do: {}".format(me, why) for why in problems()]
    if refusals:
        suggestions = [s for s in others_on_path() if not s.startswith(sys.executable + " ")]
        if suggestions:
            refusals.append("supported interpreters found here: " + ", ".join(suggestions)
                            + "; choose one with PYTHON=, e.g. make test PYTHON=" + suggestions[0].split(" ")[0])
        return refusals
    if os.path.exists(os.path.join(venv, "pyvenv.cfg")) or os.path.exists(os.path.join(venv, "bin")):
        theirs = ask(os.path.join(venv, "bin", "python"))
        if theirs is None:
            refusals.append("{} exists but its Python does not run (its interpreter was removed or moved): "
                            "remove it with make clean-venv, then run the same command again".format(venv))
        elif " ".join(theirs) != identity():
            refusals.append("{} was made with {} from {}, and this set-up would use {} from {}: a venv is never "
                            "reused across interpreters. Remove it with make clean-venv, then run the same command "
                            "again (or give PYTHON= the interpreter it was made with)".format(
                                venv, theirs[1], theirs[2], platform.python_version(), sys.base_prefix))
    return refusals


def main(argv=None):
    parser = argparse.ArgumentParser(prog="interpreter.py", description=__doc__.splitlines()[0])
    # no abbreviated flags (--desc is not --describe); set as an attribute, not a keyword, which argparse
    # before 3.5 would refuse before an interpreter that old is told it is out
    parser.allow_abbrev = False
    parser.add_argument("--venv", default=".venv", help="the venv the set-up would build or reuse")
    parser.add_argument("--describe", action="store_true", help="print this interpreter's identity and exit")
    args = parser.parse_args(argv)
    if args.describe:
        print(identity())
        return 0
    refusals = check(args.venv)
    for line in refusals:
        print("set-up: " + line, file=sys.stderr)
    return 2 if refusals else 0


if __name__ == "__main__":
    sys.exit(main())
