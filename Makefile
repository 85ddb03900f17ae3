# Two commands matter: `make demo` (the main job on embedded defaults) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench chaos clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[all,dev]'
	# Bytecode for our packages, as a wheel install compiles it (an editable install does not,
	# and with PYTHONDONTWRITEBYTECODE set every start would compile 260 modules again).
	$(BIN)/python -m compileall -q -j 0 gateway adapters agent_core storage hermes_common
	touch $(STAMP)

# `make demo ARGS=--keep` leaves the demo gateway (API, dashboard) up until Ctrl-C.
demo: $(STAMP)
	$(BIN)/hermes demo $(ARGS)

test: $(STAMP)
	$(BIN)/ruff check gateway adapters agent_core storage hermes_common tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy
	# 4 workers on 2 cores: most tests wait on sockets, fakes and child processes
	$(BIN)/pytest -q -n 4 --dist loadfile --durations=25

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

# The long chaos run (about 10 minutes): `make chaos ARGS="--seed 42 --duration 300 --users 6"`
chaos: $(STAMP)
	$(BIN)/python benchmarks/chaos_gateway.py $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
