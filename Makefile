# Every target creates .venv on first use and installs the pinned dependencies (quietly: what a target
# prints on stdout is its command's own output, so `make plan FORMAT=json > plan.json` is JSON).
# GNU make exits 2 whenever a command fails, whatever its code: a failing `mldiag` target prints the
# command's own exit code (README "Exit codes") on stderr; pipelines that branch on it call .venv/bin/mldiag.
PY := .venv/bin/python
MLDIAG := .venv/bin/mldiag
STACK ?= dev
FORMAT ?= table
# run a mldiag command; on failure say its exit code, which make itself cannot pass on
mldiag = @$(MLDIAG) $(1) || { code=$$?; echo "mldiag $(firstword $(1)) exited $$code (README: Exit codes)" >&2; exit $$code; }

.PHONY: plan test lint bench venv compiled clean diff verify e2e mermaid-deps pictures

venv: .venv/.installed

# pip byte-compiles what it installs on one core (about a minute for the cloud SDKs); compileall does it on
# every core. Compiled up front, so the e2e tier's many program processes never compile the SDKs themselves;
# of the GCP and Azure SDKs (650 MB) only the modules the program imports (13 s instead of 26 s here).
SDK_MODULES_NOT_IMPORTED := pulumi_(azure_native|gcp)/(?!(kubernetesconfiguration|relay|containerservice|container|config)/)[a-z0-9_]+/
.venv/.installed: requirements.txt requirements-dev.txt pyproject.toml mldiag/launcher/pyproject.toml
	@test -x $(PY) || python3 -m venv .venv >&2
	@$(PY) -m pip install -q --no-compile -r requirements-dev.txt >&2
	@$(PY) -m compileall -qq -j 0 -x '$(SDK_MODULES_NOT_IMPORTED)' .venv/lib >&2
	@touch $@

# The project's own modules byte-compiled the same way (stale files are recompiled: Python checks each
# against its source). Where PYTHONDONTWRITEBYTECODE is set, as on CI here, every process would otherwise
# compile them again: a tenth of a second for each plan, each policy pack and each program the e2e tier runs.
compiled: venv
	@$(PY) -m compileall -qq -j 0 -x '/(venv|node_modules)/' mldiag program components policies __main__.py >&2

plan: venv compiled
	$(call mldiag,plan $(STACK) --format $(FORMAT) $(if $(CONFIG_FILE),--config-file $(CONFIG_FILE)))

# mypy per layer (pyproject.toml [tool.mypy]): the library, the program with the product CLI, and the pack
# from its own directory, as it runs standalone (its cache kept out of it: tests copy the directory). The
# checks run side by side, but the program's mypy after the library's: it reuses the library's cache (one
# cache shared by two concurrent runs would race on it).
LINTERS := ruff mypy-library mypy-program mypy-policies
.PHONY: $(LINTERS)
lint: venv
	@$(MAKE) --no-print-directory -j 2 --output-sync=target $(LINTERS)

ruff: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

mypy-library: venv
	$(PY) -m mypy -p ml_diagnostics

mypy-program: mypy-library
	$(PY) -m mypy program mldiag __main__.py

mypy-policies: venv
	cd policies && ../$(PY) -m mypy --config-file ../pyproject.toml --cache-dir ../.mypy_cache/policies mldiag_policy __main__.py

# The unit tier, on every core (TEST_JOBS=1 runs it in one process); tests/e2e is `make e2e`.
TEST_JOBS ?= auto
test: venv compiled
	@$(MAKE) --no-print-directory -j 2 --output-sync=target $(LINTERS) mermaid-deps
	$(PY) -m pytest -n $(TEST_JOBS) --ignore=tests/e2e

bench: venv compiled
	$(PY) -m dev.bench.plan
	$(PY) -m dev.bench.lro
	$(PY) -m dev.bench.fleet
	$(PY) -m dev.bench.cluster

clean:
	rm -rf .venv .pytest_cache .ruff_cache .mypy_cache plan-out $(MERMAID)/node_modules

# Mermaid's parser (tests) and renderer (pictures), pinned in dev/mermaid/package-lock.json. Without npm
# the Mermaid parser tests skip with that reason.
MERMAID := dev/mermaid
mermaid-deps: $(MERMAID)/node_modules/.installed

$(MERMAID)/node_modules/.installed: $(MERMAID)/package.json $(MERMAID)/package-lock.json
	@if command -v npm >/dev/null; then \
		cd $(MERMAID) && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else echo "npm not found: the Mermaid parser tests will be skipped"; fi

# The graph pictures in docs/ (docs/offline-plan.md, "Plan and diff as a graph"): Mermaid sources, then Mermaid's renderer in
# headless Chromium (apt-get install -y chromium; CHROMIUM=/path overrides /usr/bin/chromium).
pictures: venv mermaid-deps
	$(PY) -m dev.gen.pictures --write docs
	node $(MERMAID)/render.mjs docs/plan-dev.mmd docs/diff-sample.mmd

BASE ?= origin/main
diff: venv compiled
	$(call mldiag,plan $(STACK) --diff-base $(BASE) --format $(FORMAT))

# Read-only post-deploy checks of every target (README "Verify"); its exit codes: README "Exit codes".
WAIT ?= 0
verify: venv compiled
	$(call mldiag,verify $(STACK) --format $(FORMAT) --wait $(WAIT) $(if $(PULUMI_STACK),--pulumi-stack $(PULUMI_STACK)) $(if $(CONFIG_FILE),--config-file $(CONFIG_FILE)))

# End-to-end tier: restores (or reuses, or builds from Go modules) the toolchain, then runs tests/e2e with the real CLI
# against loopback control planes. See docs/e2e.md, "End-to-end tests". Test files run on E2E_JOBS workers, each file
# whole and in order on one worker with its own control plane (E2E_JOBS=0: one process).
E2E_JOBS ?= 2
e2e: venv compiled
	bash dev/e2e/toolchain.sh
	MLDIAG_E2E=1 $(PY) -m pytest -x -p no:cacheprovider $(if $(filter 0,$(E2E_JOBS)),,-n $(E2E_JOBS) --dist loadfile) tests/e2e -v --durations=15
