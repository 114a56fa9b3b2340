# The two commands of the README, plus the checks CI runs.
#
#   make demo   build sluice, generate a 256 MiB corpus, count its words, show the top words
#   make test   formatting, lints, the dependency checks, the shm clients, and every test
#               (what .ci/run calls)
#   make fuzz   every fuzz target for FUZZ_SECONDS each (not part of `make test`; see
#               docs/FUZZING.md)

CARGO ?= cargo
SLUICE := target/release/sluice
DEMO := target/demo

.PHONY: demo test test-lane-plugin test-lane-rest prereqs fmt lint deps build hadoop stores yarn plugin clients loom loom-mutants miri fuzz

build:
	$(CARGO) build --release -p sluice-cli

demo: build
	rm -rf $(DEMO)
	$(SLUICE) gen text --size 256MiB --output $(DEMO)/corpus
	$(SLUICE) run wordcount --input $(DEMO)/corpus --output $(DEMO)/counts --reducers 2 --memory 256MiB
	@echo "Most frequent words:"
	@sort -t "$$(printf '\t')" -k2,2nr $(DEMO)/counts/part-r-* | head -n 10

# What `make test` needs, checked before anything is built: it says what to install.
prereqs:
	@tests/prereqs.sh

fmt:
	$(CARGO) fmt --all -- --check

# Also the shm ring's fuzzing hooks, which only fuzz/ enables, and the fuzz targets themselves
# (fuzzing needs nightly; checking that they still build against the crates does not).
lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p sluice-shm --features fuzzing -- -D warnings
	$(CARGO) check --manifest-path fuzz/Cargo.toml --locked --quiet

# No unused dependency (cargo-machete), and the dependency tree's bans, licenses and sources
# as deny.toml allows them (cargo-deny). Each tool is installed from crates.io when missing.
deps:
	@$(CARGO) machete --version >/dev/null 2>&1 || $(CARGO) install --locked cargo-machete
	$(CARGO) machete
	@$(CARGO) deny --version >/dev/null 2>&1 || $(CARGO) install --locked cargo-deny
	$(CARGO) deny check bans licenses sources

# Apache Hadoop's jars for the differential tests of `sluice streaming` (tests/hadoop/README.md).
hadoop:
	tests/hadoop/fetch.sh

# Apache Hadoop's minicluster jars, for the tests that run a real HDFS (tests/stores/README.md).
stores:
	tests/stores/fetch.sh

# sluice's YARN submitter, target/yarn/sluice-yarn.jar (yarn/README.md), and Apache Hadoop's
# minicluster jars for its tests and the plugin's, which run a real YARN cluster
# (tests/yarn/README.md).
yarn:
	yarn/build.sh
	tests/yarn/fetch.sh

# sluice's map-output collector for Hadoop, target/plugin/sluice-plugin.jar with the native
# library (crates/jni) inside (plugin/README.md).
plugin:
	plugin/build.sh

# The C and Python clients of the shm protocol: the C one must build warning-free, the Python
# one passes its own tests. (Both are also run against the engine by the Rust conformance suite.)
clients:
	$(MAKE) -s -C clients/c BUILD=$(CURDIR)/target/clients/c check
	PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider clients/python/tests

# The shm ring's wake-up protocol under the loom model checker (`--cfg loom`, its own target
# directory), and the check that those tests fail when the protocol is broken; the shm crate's
# unit tests under Miri (nightly, which the script adds with rustup when missing: not in CI).
# docs/ROBUSTNESS.md, "The shm ring under a model checker and Miri".
loom:
	CARGO="$(CARGO)" tests/shm/loom.sh

loom-mutants:
	tests/shm/loom-mutants.sh

miri:
	tests/shm/miri.sh

# The tests that need Hadoop, HDFS and S3 servers, YARN, or root are ignored (listed, with the reason)
# unless these features are on; here they are, so every test runs. The plugin's crate
# (sluice-jni) is tested on its own, with its own features, beside everything else.
TEST_FEATURES := sluice-cli/test-browser,sluice-cli/test-clients,sluice-cli/test-hadoop,sluice-cli/test-root,sluice-cli/test-stores,sluice-cli/test-yarn,$\
	sluice-stores/test-stores,sluice-testkit/test-stores,sluice-testkit/test-yarn,sluice-io/test-hadoop
PLUGIN_TEST_FEATURES := sluice-jni/test-hadoop,sluice-jni/test-root,sluice-jni/test-yarn
# Release's optimisation without its link-time optimisation (Cargo.toml says why).
TEST_PROFILE := --profile test-release
TEST_PLUGIN := $(CARGO) test $(TEST_PROFILE) -p sluice-jni --features $(PLUGIN_TEST_FEATURES)
TEST_REST := $(CARGO) test $(TEST_PROFILE) --workspace --exclude sluice-jni --features $(TEST_FEATURES)

# Everything is built first; then two lanes run side by side: the plugin's tests (Hadoop jobs
# in JVMs and a MiniMRYarnCluster, about 12 minutes on 2 cores) and all the others (about 15).
# Most of those tests wait on JVMs and clusters more than they compute: on 2 cores the two
# lanes end in about 15 minutes where the tests one after another took 21. Each lane's output
# is printed whole when the lane ends; a failure in one does not stop the other, and either
# fails `make test`.
test: prereqs fmt lint deps hadoop stores yarn plugin clients
	$(TEST_REST) --no-run
	$(TEST_PLUGIN) --no-run
	@echo "Running two lanes of tests side by side (each prints its output when it ends):"
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-lane-plugin test-lane-rest

test-lane-plugin:
	$(TEST_PLUGIN)

test-lane-rest:
	$(TEST_REST)

# The cargo-fuzz targets under fuzz/, one after another, FUZZ_SECONDS each (nightly toolchain and
# cargo-fuzz needed). Not part of `make test`: fuzzing takes as long as it is given.
FUZZ_SECONDS ?= 60

fuzz:
	fuzz/run.sh $(FUZZ_SECONDS)
