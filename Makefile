# Everything runs inside .venv, created on first use from the system's python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO := demo

.PHONY: install demo test bench clean clean-cache

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,gensim,pyldavis,parquet,report,sklearn,dask]'
	touch $(STAMP)

install: $(STAMP)

# Prepare the bundled State of the Union paragraphs, fit LDA, print topics and the held-out score.
demo: $(STAMP)
	$(BIN)/topicscale prepare data/sotu.jsonl.gz --heldout 0.1 --min-df 5 -o $(DEMO)/sotu
	$(BIN)/topicscale fit $(DEMO)/sotu --config demo --force -o $(DEMO)/model
	$(BIN)/topicscale topics $(DEMO)/model
	$(BIN)/topicscale eval $(DEMO)/model $(DEMO)/sotu-heldout

test: $(STAMP)
	$(BIN)/python -m pytest -q

# Side-by-side benchmarks (benchmarks/README.md): a separate .venv-bench with the peers, corpora from
# the package registries, results under benchmarks/results/. About an hour on 2 cores;
# `make bench BENCH_ARGS=--quick` checks the machinery in minutes (benchmarks/results-quick/).
BENCH_VENV := .venv-bench
bench:
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet -e '.[dask]' -r benchmarks/requirements.txt
	$(BENCH_VENV)/bin/python benchmarks/bench_all.py $(BENCH_ARGS)

clean: clean-cache
	rm -rf $(VENV) $(DEMO) build *.egg-info

clean-cache:
	find topicscale -name '*.nbi' -delete -o -name '*.nbc' -delete
