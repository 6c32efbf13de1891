# The README's two commands. Each does all of its own set-up on a fresh machine.
# `make prove` installs what proving needs and nothing more (pycert with its prove extra: node, the solvers,
# numba, matplotlib); `make test` adds the ray, test and leak extras (Ray, pytest, libCacheSim, torch,
# transformers: the suite, `pycert leak run` and `pycert engine replay`).
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup toolchain prove verify test browser install-check

$(VENV)/.prove-deps: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# the distribution was called pycert before it became pycert-kv (PyPI's pycert is another project)
	$(BIN)/python -m pip uninstall -q -y pycert 2>/dev/null || true
	$(BIN)/python -m pip install -q -e '.[prove]'
	touch $@

$(VENV)/.test-deps: pyproject.toml $(VENV)/.prove-deps
	$(BIN)/python -m pip install -q -e '.[prove,ray,test,leak]'
	touch $@

toolchain: $(VENV)/.prove-deps
	$(BIN)/pycert toolchain install

# Everything a developer needs: both sets of dependencies and the toolchain.
setup: $(VENV)/.test-deps toolchain

# The report page is tested in real headless Chromium (Debian's package), installed when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium missing and not root: the browser test will fail"; fi; }

prove: toolchain
	$(BIN)/pycert prove all

# Every committed certificate this clone can check, offline (no Lean): those of a Mooncake trace that is not
# beside the clone (../shared/traces/mooncake-fast25/) are "not checked: trace not here" (verify's exit 5),
# which this target accepts; a rejection (1) or a damaged directory (2) fails it.
verify: $(VENV)/.prove-deps
	$(BIN)/pycert verify certificates/*.json datasets/first-touch/certificates/*.json; rc=$$?; \
	  [ $$rc -eq 0 ] || [ $$rc -eq 5 ]

# `make test` runs this too (tests/test_install.py is part of the suite); here it runs alone.
install-check: setup
	$(BIN)/python -m pytest tests/test_install.py

test: setup browser
	$(BIN)/python -m pytest

# The first-touch dataset (docs/dataset.md): the engine on CPU, then the kernel; tens of minutes on a
# shared 2-core machine (BENCHMARKS.md). dataset-reprove proves its certificates again from the recorded
# log (after a change under lean/), without the engine.
MOONCAKE := ../shared/traces/mooncake-fast25/conversation_trace.jsonl
.PHONY: dataset dataset-check dataset-reprove
dataset: setup
	$(BIN)/pycert dataset first-touch --trace $(MOONCAKE) --out datasets/first-touch
dataset-check: setup
	$(BIN)/pycert dataset first-touch --check datasets/first-touch --trace $(MOONCAKE)
dataset-reprove: setup
	$(BIN)/pycert dataset first-touch --reprove datasets/first-touch --trace $(MOONCAKE)
