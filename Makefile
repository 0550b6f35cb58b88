# Two commands matter:  `make course` runs the course, `make test` tests it.
# Both create .venv from requirements.txt when it is missing or out of date.
VENV   := .venv
BIN    := $(VENV)/bin
# The interpreter the venv is made from: CPython 3.11.2 to 3.13, checked before pip starts
# (src/course_tools/interpreter.py). Not given: the one the existing venv was made from, else
# python3.11 or python3 on PATH. A venv is never reused across interpreters: make clean-venv first.
DEFAULT_PYTHON = $(shell test -x $(BIN)/python && echo $(BIN)/python || command -v python3.11 || command -v python3)
# `make drift PYTHON=...`: there PYTHON is the other interpreter the course is re-run on (DRIFT_PYTHON),
# and .venv, the reference, keeps the interpreter it was made from.
ifneq ($(filter drift,$(MAKECMDGOALS)),)
ifneq ($(filter command line environment environment override,$(origin PYTHON)),)
DRIFT_PYTHON := $(PYTHON)
override PYTHON := $(DEFAULT_PYTHON)
endif
endif
ifeq ($(origin PYTHON),undefined)
PYTHON := $(DEFAULT_PYTHON)
endif
STAMP  := $(VENV)/.installed
JOBS   ?= 2
# Python may cache bytecode: a test run starts dozens of Python processes (kernels, graders,
# CLI runs) that import the course's own modules, and without the cache each one compiles
# them again (about 6 % of a test run's CPU, measured). Some machines set this variable.
unexport PYTHONDONTWRITEBYTECODE
# The installer, the same on every Python (each brings its own: Debian's 3.11.2 pip 23.0.1, pyenv's 3.11.7
# 23.2.1). 26.x reads PyPI's metadata files (PEP 658), so `make lock` and the lock's test, which resolve for
# Pythons other than the venv's, fetch metadata instead of every torch and CUDA wheel.
PIP_VERSION := 26.3
# disk space the set-up needs before it starts; pip fails half-way, and obscurely, without it
SETUP_GIB ?= 7

.PHONY: course test quick browser lab outputs drift release grade bench bench-cluster stress site clean-venv

# TORCH_INDEX: install torch from another index first, e.g. PyTorch's CPU-only wheels (see README):
#   make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=

# the interpreter check runs before every use of the venv (order-only: it never forces a re-install)
.PHONY: python-check
python-check:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "set-up: no Python found (PYTHON=$(PYTHON)); the course needs \
	CPython 3.11.2 to 3.13: give one with PYTHON=, e.g. make test PYTHON=/usr/bin/python3.11" >&2; exit 2; }
	@$(PYTHON) src/course_tools/interpreter.py --venv $(VENV)

$(STAMP): requirements.txt requirements.lock pyproject.toml | python-check
	@echo "[setup 1/3] $(VENV): a virtual environment from $(PYTHON) ($$($(PYTHON) -c 'import platform; print(platform.python_version())'))"
	@$(PYTHON) -c 'import shutil, sys; free = shutil.disk_usage(".").free / 2**30; \
	sys.exit(0 if free >= $(SETUP_GIB) else f"not enough disk space to set up $(VENV): {free:.1f} GiB free here, the venv needs about $(SETUP_GIB) GiB (torch from PyPI is a CUDA build). Free some space; with TORCH_INDEX set to a CPU-only index about 2 GiB is enough (SETUP_GIB=2).")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip --version | grep -q '^pip $(PIP_VERSION) ' || $(BIN)/python -m pip install --quiet pip==$(PIP_VERSION)
	@echo "[setup 2/3] the pinned packages of requirements.txt, every dependency at its version in requirements.lock."
	@echo "            torch from PyPI is a CUDA build:"
	@echo "            about 2.8 GB to download with its CUDA libraries and 6 GB installed; several minutes."
	$(if $(TORCH_INDEX),$(BIN)/python -m pip install --progress-bar on "$$(grep '^torch==' requirements.txt)" --index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --progress-bar on -r requirements.txt -c requirements.lock
	@echo "[setup 3/3] the course package itself (editable)"
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m course_tools.lab_panel.develop   # Lab's Exercises panel: an editable install leaves it out
	@$(BIN)/python src/course_tools/interpreter.py --describe > $(STAMP)   # which Python the venv is made from
	@echo "set-up done: $$(du -sh $(VENV) | cut -f1) in $(VENV)"

## course: execute every lesson notebook (proves they run here), regenerate exercises, grade one sample
##         submission of each kind, build the course site (build/site/index.html); progress and seconds per step
course: $(STAMP)
	$(BIN)/course run

## lock: regenerate requirements.lock after changing requirements.txt. pip resolves requirements.txt afresh,
##       as a new venv would (a dry run: metadata only, nothing installed); the next set-up installs it.
.PHONY: lock
lock:
	PYTHONPATH=src $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON)) -m course_tools.lock

## browser: Debian's chromium for the browser tests (tests/course_tools/test_site.py, tests/test_lab_roundtrip.py),
##          installed once with apt-get when we are root; otherwise those tests are skipped, saying why.
##          A failed install stops CI (CI=true) and only warns elsewhere.
CHROMIUM ?= /usr/bin/chromium
APT_GET  ?= apt-get
browser:
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = 0 ] && command -v $(APT_GET) >/dev/null; then \
	  echo "[setup] Debian's chromium, for the browser tests (apt-get, once)"; \
	  { $(APT_GET) update -qq && DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq chromium >/dev/null; } \
	  || if [ -n "$$CI" ]; then echo "could not install chromium, and CI runs the browser tests: stopping"; exit 1; \
	     else echo "could not install chromium: the browser tests will be skipped"; fi; \
	fi

## hub-proxy: configurable-http-proxy, the hub's proxy, from npm into hub/node_modules (the version
##            hub/package-lock.json pins), for the hub tests; as root without npm, Debian's nodejs and npm first
# npm trusts the certificates the system trusts (pip and git already do; Node has its own list, so behind a
# proxy that re-signs TLS, npm alone failed with "self-signed certificate in certificate chain")
SYSTEM_CA ?= /etc/ssl/certs/ca-certificates.crt
.PHONY: hub-proxy
hub-proxy:
	@if [ ! -x hub/node_modules/.bin/configurable-http-proxy ]; then \
	  if ! command -v npm >/dev/null && [ "$$(id -u)" = 0 ] && command -v $(APT_GET) >/dev/null; then \
	    echo "[setup] Debian's nodejs and npm, for the hub's proxy (apt-get, once)"; \
	    { $(APT_GET) update -qq && DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq nodejs npm >/dev/null; } \
	    || echo "could not install npm: the hub tests will be skipped"; \
	  fi; \
	  if command -v npm >/dev/null; then \
	    echo "[setup] configurable-http-proxy: npm ci --prefix hub (once)"; \
	    ca=$${NODE_EXTRA_CA_CERTS:-$$(test -r $(SYSTEM_CA) && echo $(SYSTEM_CA))}; \
	    NODE_EXTRA_CA_CERTS=$$ca npm ci --prefix hub --no-audit --no-fund --loglevel=error \
	    || echo "npm ci failed (see npm's error above): the hub tests will be skipped"; \
	  else echo "no npm: the hub tests will be skipped (apt-get install nodejs npm)"; fi; \
	fi

## test: unit tests plus `pytest --nbval` over notebooks/ and solutions/
test: $(STAMP) browser hub-proxy
	$(BIN)/python -m pytest -n $(JOBS) --nbval --dist loadfile

## quick: the maintainer's loop while editing a lesson: every lesson and solution re-executed and compared
##        (nbval), the helpers' unit tests, the stored-output audits and the lint. Leaves the grader, the
##        sandbox, the site, the browser tests, the set-up and the CLI to `make test`, which CI runs.
QUICK_TESTS = $(addprefix tests/compile_course/test_,comparison.py diagnostics.py boundary.py checks.py torch_logs.py \
                session.py timing.py) tests/test_stored_outputs.py tests/test_lint.py
# the two slowest helper tests stay in the full run: a cold inductor compile, and a fresh interpreter importing torch;
# so does lesson 10, whose scripts run in fresh Pythons with cold inductor compiles and the minifier (minutes)
QUICK_SKIP  = --deselect tests/compile_course/test_timing.py::test_inductor_cache_cold_then_warm \
              --deselect tests/compile_course/test_session.py::test_importing_compile_course_silences_cpp_extension_before_torch \
              --ignore=notebooks/10_torch_artifacts.ipynb
quick: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --nbval --dist loadfile notebooks solutions $(QUICK_TESTS) $(QUICK_SKIP)

## lab: JupyterLab on your workspace, work/ (copies of the lessons and exercises that are yours to edit;
##      new ones are added, your changes never overwritten), opened at lesson 01. As root too.
##      Extra flags for jupyter lab:  make lab LAB_ARGS="--no-browser --port 8899"
LAB_ARGS ?=
lab: $(STAMP)
	$(BIN)/course lab $(LAB_ARGS)

## lab-panel: rebuild Lab's Exercises panel (src/course_tools/lab_panel/labextension/, committed) from its TypeScript in
##            lab/extension/ (maintainers only; needs node and npm; students install the committed build)
.PHONY: lab-panel
lab-panel: $(STAMP)
	$(BIN)/python -m course_tools.lab_panel.build

## hub-env: the students' shared environment of the hub (course hub-env), as TLJH's /opt/tljh/user: a venv at PREFIX
##          (default /opt/torch-compile-course/env) with the student edition's packages installed non-editable and the
##          third-party ones hard-linked from .venv (no download; about a minute), scanned for solutions, hidden tests'
##          lines and instructor-only modules. Run as root. make hub builds it when missing:  make hub-env PREFIX=/srv/env
PREFIX ?=
.PHONY: hub-env
hub-env: $(STAMP)
	$(BIN)/course hub-env $(PREFIX)

## hub: the class's JupyterHub on this machine (hub/jupyterhub_config.py, sqlite, configurable-http-proxy from npm).
##      As root: students log in with their Unix accounts, each server runs as its student. Otherwise a DEMO with
##      no isolation on disk between students. Prints the nbgitpuller link for students (docs/hub-instructors.md).
##      As root, students' servers run from the hub-env environment (built first when missing; COURSE_HUB_ENV=DIR
##      names another, e.g. sudo COURSE_HUB_ENV=/srv/env make hub).
.PHONY: hub
hub: $(STAMP)
	$(BIN)/python hub/start.py

## site: build the course site alone into build/site/ (Sphinx over the stored outputs, plus a tlparse report)
site: $(STAMP)
	$(BIN)/python -m course_tools.site.build

## outputs: re-execute notebooks and store their normalized outputs (the only writer of stored outputs)
outputs: $(STAMP)
	$(BIN)/course execute notebooks/*.ipynb solutions/*.ipynb

## drift: re-run every notebook and solution under another torch, or another Python, and report what changed, e.g.
##        make drift TORCH=2.13.0   or   make drift TORCH=path/to/torch-X.whl   (report: build/drift/report.html)
##        make drift PYTHON=/root/.pyenv/versions/3.12.1/bin/python3   (its venv: ~/.cache/compile-course/drift/;
##        .venv stays the reference); TORCH= and PYTHON= together: that torch on that Python
drift: $(STAMP)
	@test -n "$(TORCH)$(DRIFT_PYTHON)" || { echo "usage: make drift TORCH=<torch version or wheel path> and/or \
	PYTHON=<another interpreter>"; exit 2; }
	$(BIN)/course drift $(if $(TORCH),--torch "$(TORCH)") $(if $(DRIFT_PYTHON),--python "$(DRIFT_PYTHON)") --jobs $(JOBS)

## release: regenerate exercises/ from solutions/
release: $(STAMP)
	$(BIN)/course release

## grade: grade a folder of submissions, e.g. make grade SUBMISSIONS=path/to/dir
grade: $(STAMP)
	$(BIN)/course grade run $(SUBMISSIONS)

## stress: the test command beside 0, 2 and 4 CPU hogs, several runs each; prints passes and wall times
stress: $(STAMP)
	$(BIN)/python scripts/stress_tests.py

## bench: time the test command with a cold and a warm compile cache
bench: $(STAMP)
	$(BIN)/python scripts/bench_tests.py

## bench-cluster: submissions/minute grading one class locally (--jobs 2) and on a 2-worker Dask LocalCluster
bench-cluster: $(STAMP)
	$(BIN)/python scripts/bench_cluster.py

## clean-venv: remove .venv (after a failed set-up, or to set up again with another PYTHON=)
clean-venv:
	rm -rf $(VENV)
