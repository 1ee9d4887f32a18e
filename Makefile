# Set-up and entry points.  Every target creates .venv on first use and
# re-installs only when pyproject.toml changed, so repeated runs are quick.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check
PIP_Q  ?= -q

.PHONY: demo test test-fast bench docs-test examples figures clean

demo: $(VENV)/.installed-core
	$(BIN)/python -m kic.demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

# the development loop: everything but the tests marked slow (pyproject.toml)
test-fast: $(VENV)/.installed-test
	$(BIN)/python -m pytest -m "not slow"

bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/single_pose.py
	$(BIN)/python benchmarks/serial.py
	$(BIN)/python benchmarks/closed.py
	$(BIN)/python benchmarks/linearize.py
	$(BIN)/python benchmarks/designs.py
	$(BIN)/python benchmarks/drives.py
	$(BIN)/python benchmarks/cold_start.py

# the design studies and control loops of examples/ (plots to examples/out/); QUICK=1 for
# short runs
examples: $(VENV)/.installed-test
	$(BIN)/python examples/five_bar_optimization.py $(if $(QUICK),--quick)
	$(BIN)/python examples/stewart_sweep.py $(if $(QUICK),--quick)
	$(BIN)/python examples/five_bar_haptic_lqr.py $(if $(QUICK),--quick)
	$(BIN)/python examples/stewart_computed_torque.py $(if $(QUICK),--quick)

# the committed figures under docs/figures/
figures: $(VENV)/.installed-test
	$(BIN)/python docs/figures/make_closed_figures.py
	$(BIN)/python docs/figures/make_design_figures.py
	$(BIN)/python docs/figures/make_workspace.py

docs-test: $(VENV)/.installed-test
	$(BIN)/python -m pytest tests/test_docs.py

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# One stamp per extra; a stamp is older than pyproject.toml after an edit.
$(VENV)/.installed-core: pyproject.toml | $(BIN)/python
	$(PIP) install $(PIP_Q) -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) install $(PIP_Q) -e '.[test]'
	@touch $@ $(VENV)/.installed-core

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(PIP) install $(PIP_Q) -e '.[bench]'
	@touch $@ $(VENV)/.installed-core

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
