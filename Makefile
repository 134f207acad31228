# thinklens: every target creates/uses .venv; torch==2.13.0 (CPU build on these machines) is installed first
# so that no dependency pulls a CUDA build of torch.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: venv demo test test-all test-gpu bench app clean-venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m tools.demo

# the default tier on TEST_WORKERS pytest-xdist workers (one per core of a 2-core machine; TEST_WORKERS=0 runs it
# in this process); --dist loadfile keeps each test file on one worker, so module fixtures are built once
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test-all: $(STAMP)
	$(PY) -m pytest -q -m ""

# the GPU tier (tests/gpu): skipped where no CUDA device exists
test-gpu: $(STAMP)
	$(PY) -m pytest -q -m gpu tests/gpu

# every bench/*.py but the shared helpers (bench/_*.py)
bench: $(STAMP)
	@for b in bench/[!_]*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

app: $(STAMP)
	$(VENV)/bin/thinklens app

clean-venv:
	rm -rf $(VENV)
