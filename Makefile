# Two commands matter:  `make course` runs the course, `make test` tests it.
# Both create .venv from requirements.txt when it is missing or out of date.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 2

.PHONY: course test lab outputs release grade bench site clean-venv

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

## course: execute every lesson notebook, render HTML, regenerate exercises, grade the samples, build the site
course: $(STAMP)
	$(BIN)/course run

## test: unit tests plus `pytest --nbval` over notebooks/ and solutions/
test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --nbval --dist loadfile

## lab: open JupyterLab on the course
lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

## site: build the course site alone into build/site/ (Sphinx over the stored outputs, plus a tlparse report)
site: $(STAMP)
	$(BIN)/python -m compile_course.site.build

## outputs: re-execute notebooks and store their normalized outputs (the only writer of stored outputs)
outputs: $(STAMP)
	$(BIN)/course execute notebooks/*.ipynb solutions/*.ipynb

## release: regenerate exercises/ from solutions/
release: $(STAMP)
	$(BIN)/course release

## grade: grade a folder of submissions, e.g. make grade SUBMISSIONS=path/to/dir
grade: $(STAMP)
	$(BIN)/course grade $(SUBMISSIONS)

## bench: time the test command with a cold and a warm compile cache
bench: $(STAMP)
	$(BIN)/python scripts/bench_tests.py

clean-venv:
	rm -rf $(VENV)
