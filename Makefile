# Every target creates .venv on first use and installs the pinned dependencies.
PY := .venv/bin/python
STACK ?= dev
FORMAT ?= table

.PHONY: plan test lint bench venv clean diff verify e2e mermaid-deps pictures

venv: .venv/.installed

.venv/.installed: requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

plan: venv
	$(PY) -m tools.plan $(STACK) --format $(FORMAT)

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy -p ml_diagnostics

test: lint mermaid-deps
	$(PY) -m pytest

bench: venv
	$(PY) tools/bench_plan.py
	$(PY) tools/bench_lro.py

clean:
	rm -rf .venv .pytest_cache .ruff_cache .mypy_cache plan-out $(MERMAID)/node_modules

# Mermaid's parser (tests) and renderer (pictures), pinned in tools/mermaid/package-lock.json. Without npm
# the Mermaid parser tests skip with that reason.
MERMAID := tools/mermaid
mermaid-deps: $(MERMAID)/node_modules/.installed

$(MERMAID)/node_modules/.installed: $(MERMAID)/package.json $(MERMAID)/package-lock.json
	@if command -v npm >/dev/null; then \
		cd $(MERMAID) && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else echo "npm not found: the Mermaid parser tests will be skipped"; fi

# The graph pictures in docs/ (README "Plan and diff as a graph"): Mermaid sources, then Mermaid's renderer in
# headless Chromium (apt-get install -y chromium; CHROMIUM=/path overrides /usr/bin/chromium).
pictures: venv mermaid-deps
	$(PY) -m tools.plan_pictures --write docs
	node $(MERMAID)/render.mjs docs/plan-dev.mmd docs/diff-sample.mmd

BASE ?= origin/main
diff: venv
	$(PY) -m tools.plan $(STACK) --diff-base $(BASE) --format $(FORMAT)

# Read-only post-deploy checks of every target (README "After `pulumi up`"); exit 0/1/2/3.
WAIT ?= 0
verify: venv
	$(PY) -m tools.verify $(STACK) --format $(FORMAT) --wait $(WAIT) \
		$(if $(PULUMI_STACK),--pulumi-stack $(PULUMI_STACK)) $(if $(CONFIG_FILE),--config-file $(CONFIG_FILE))

# End-to-end tier: restores (or reuses, or builds from Go modules) the toolchain, then runs tests/e2e with the real CLI
# against a loopback control plane. See README "End-to-end tests".
e2e: venv
	bash tools/e2e/toolchain.sh
	MLDIAG_E2E=1 $(PY) -m pytest -x -p no:cacheprovider tests/e2e -v
