# Every target creates .venv on first use and installs the pinned dependencies.
PY := .venv/bin/python
STACK ?= dev
FORMAT ?= table

.PHONY: plan test lint bench venv clean diff verify e2e

venv: .venv/.installed

.venv/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

plan: venv
	$(PY) -m tools.plan $(STACK) --format $(FORMAT)

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test: lint
	$(PY) -m pytest

bench: venv
	$(PY) tools/bench_plan.py
	$(PY) tools/bench_lro.py

clean:
	rm -rf .venv .pytest_cache .ruff_cache plan-out

BASE ?= origin/main
diff: venv
	$(PY) -m tools.plan $(STACK) --diff-base $(BASE) --format $(FORMAT)

# Read-only post-deploy checks of every target (README "After `pulumi up`"); exit 0/1/2/3.
WAIT ?= 0
verify: venv
	$(PY) -m tools.verify $(STACK) --format $(FORMAT) --wait $(WAIT) \
		$(if $(PULUMI_STACK),--pulumi-stack $(PULUMI_STACK)) $(if $(CONFIG_FILE),--config-file $(CONFIG_FILE))

# End-to-end tier: builds (or reuses) the toolchain from Go modules, then runs tests/e2e with the real CLI
# against a loopback control plane. See README "End-to-end tests".
e2e: venv
	bash tools/e2e/toolchain.sh
	MLDIAG_E2E=1 $(PY) -m pytest -x -p no:cacheprovider tests/e2e -v
