# crawld — plain Makefile. `make` builds bin/crawld; `make test` runs every
# cmocka test; `make asan` / `make tsan` run them under sanitizers; `make run`
# crawls the local test site; `make check-deps` checks the include graph (run by
# `make test`); `make bench` runs bench/; `make fuzz` builds the
# libFuzzer targets with clang. Modules and tests are found by wildcard, so a
# new module.c or tests/test_x.c needs no edit here.

CC ?= cc
PKG_CONFIG ?= pkg-config
VARIANT ?=

# Debian packages the build, the tests and `make run` need. The replay test
# also needs node and npm (Debian's nodejs and npm), checked by command so a
# node installed another way (which brings its own npm) is not fought with.
DEB_PKGS = pkg-config gcc make clang libclang-rt-14-dev libcurl4-openssl-dev \
	libxml2-dev libxml2-utils libxxhash-dev libsqlite3-dev libcmocka-dev \
	libmicrohttpd-dev libjansson-dev libpsl-dev zlib1g-dev libssl-dev \
	libbloom-dev libbrotli-dev libidn2-dev libzip-dev chromium \
	libhiredis-dev redis-server
PC_LIBS = libcurl libxml-2.0 libxxhash sqlite3 libmicrohttpd jansson libpsl zlib libcrypto libbrotlidec \
	libidn2 libzip hiredis

WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wwrite-strings -Wvla -Wformat=2
OPT ?= -O2 -g
SAN_asan = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_tsan = -fsanitize=thread
SAN = $(SAN_$(VARIANT))
PC_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PC_LIBS) cmocka 2>/dev/null)
PC_LDLIBS := $(shell $(PKG_CONFIG) --libs $(PC_LIBS) 2>/dev/null)
CFLAGS ?=
BASE_CPPFLAGS = -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -I.
CPPFLAGS += $(BASE_CPPFLAGS) -MMD -MP
ALL_CFLAGS = -std=c11 $(WARN) $(OPT) $(SAN) $(PC_CFLAGS) $(CFLAGS)
LDLIBS += $(PC_LDLIBS) -lpthread -lm

# Each variant (and a clang build) has its own tree; only the default
# build writes bin/.
B := build/$(or $(VARIANT),default)$(if $(findstring clang,$(CC)),-clang)
BIN := $(if $(VARIANT)$(findstring clang,$(CC)),$(B)/bin,bin)

LIB_SRC := $(filter-out crawler/cli/main.c,$(wildcard common/*.c config/*.c dedup/*.c storage/*.c frontier/*.c cluster/*.c crawler/*.c crawler/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
LIB := $(B)/libcrawld.a
TSUP_SRC := $(wildcard tests/support/*.c)
TSUP_OBJ := $(TSUP_SRC:%.c=$(B)/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TESTS := $(TEST_SRC:tests/%.c=$(B)/tests/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
REPLAYS := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=$(B)/tests/replay_%)
SITE_SRC := $(wildcard tests/site/*.c)
BENCH_SRC := $(wildcard bench/*.c)
BENCHES := $(BENCH_SRC:bench/%.c=$(B)/bench/%)
PROGS := $(BIN)/crawld $(if $(SITE_SRC),$(BIN)/testsite)

# `make install`: the binary, the man page, the example systemd unit and an
# example configuration (every option at its default) under PREFIX, staged
# under DESTDIR; the service's configuration SYSCONFDIR/crawld/crawl.toml
# is written only when there is none.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/crawld
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
DESTDIR ?=

.PHONY: all deps test check check-deps asan tsan run bench bench-crawl fuzz clean tests-build install uninstall
# Objects made through pattern rules (the tests', the replays') are kept: else
# make deletes them as intermediates and every build relinks from scratch.
.SECONDARY:
all: $(PROGS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN)/crawld: $(B)/crawler/cli/main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(BIN)/testsite: $(SITE_SRC:%.c=$(B)/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# Test builds: storage/db.c, storage/spool.c and crawler/clusterrun.c again
# with their fault hooks (CRAWLD_FAULTS, CRAWLD_CLUSTER_FAULT, see the
# sources), in a library the tests link and in bin/crawld-faults, the binary
# the failure tests run. bin/crawld itself has no hook.
FAULT_SRC := storage/db.c storage/spool.c crawler/clusterrun.c
FAULT_OBJ := $(patsubst %.c,$(B)/%-faults.o,$(FAULT_SRC))
TLIB := $(B)/libcrawld-test.a
$(B)/storage/%-faults.o: storage/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DCRAWLD_FAULT_HOOKS $(ALL_CFLAGS) -c $< -o $@
$(B)/crawler/%-faults.o: crawler/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DCRAWLD_FAULT_HOOKS $(ALL_CFLAGS) -c $< -o $@

$(TLIB): $(filter-out $(patsubst %.c,$(B)/%.o,$(FAULT_SRC)),$(LIB_OBJ)) $(FAULT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN)/crawld-faults: $(B)/crawler/cli/main.o $(TLIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(B)/tests/test_%: $(B)/tests/test_%.o $(TSUP_OBJ) $(TLIB)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

$(B)/tests/replay_%: $(B)/tests/fuzz/fuzz_%.o $(B)/tests/fuzz/replay.o $(LIB)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

$(B)/bench/%: $(B)/bench/%.o $(LIB)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS) -lbloom

tests-build: $(PROGS) $(BIN)/crawld-faults $(TESTS) $(REPLAYS)

# Installs what is missing (as root), or prints the exact line to run.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "make deps: installing$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null || exit 1; \
	else \
	  echo "make deps: missing packages; run as root:"; \
	  echo "  apt-get update && apt-get install -y --no-install-recommends$$missing"; exit 1; \
	fi

# The include graph within the module boundaries (tests/check_deps.sh has
# the table); its self-test plants bad includes in a temp copy.
check-deps:
	@sh tests/check_deps.sh --self-test
	@sh tests/check_deps.sh

# Sub-makes re-read the Makefile after deps so pkg-config sees the new packages;
# they build on every core unless the caller gave -j itself.
SUBJOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 2))
test check: deps check-deps
	@$(MAKE) --no-print-directory $(SUBJOBS) tests-build
	@sh tests/run.sh $(B) $(BIN)

asan: deps
	@$(MAKE) --no-print-directory $(SUBJOBS) VARIANT=asan tests-build
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  sh tests/run.sh $(subst default,asan,$(B)) $(subst default,asan,$(B))/bin

tsan: deps
	@$(MAKE) --no-print-directory $(SUBJOBS) VARIANT=tsan tests-build
	@TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  sh tests/run.sh $(subst default,tsan,$(B)) $(subst default,tsan,$(B))/bin

run: deps
	@$(MAKE) --no-print-directory $(SUBJOBS) all
	@sh tests/site/run-main.sh

bench: deps
	@$(MAKE) --no-print-directory $(SUBJOBS) $(PROGS) $(BENCHES)
	@sh bench/run.sh $(B) $(BIN)

# Only the peer crawl benchmark (bench/bench_crawl.sh; CRAWL_RUNS=1 for a quick one).
bench-crawl: deps
	@$(MAKE) --no-print-directory $(SUBJOBS) $(BIN)/crawld
	@B=$(B) BIN=$(BIN) CRAWLD_ROOT=$(CURDIR) sh bench/bench_crawl.sh

# libFuzzer targets (clang): build/fuzz/fuzz_NAME; see tests/fuzz/README.md.
FUZZ_CFLAGS = -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined $(PC_CFLAGS)
fuzz: deps
	@mkdir -p build/fuzz
	@for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  echo "clang $$n"; \
	  clang $(BASE_CPPFLAGS) $(FUZZ_CFLAGS) -o build/fuzz/$$n $$f $(LIB_SRC) $(LDLIBS) || exit 1; done

install: $(BIN)/crawld
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DOCDIR) $(DESTDIR)$(UNITDIR)
	install -m 755 $(BIN)/crawld $(DESTDIR)$(BINDIR)/crawld
	install -m 644 docs/crawld.1 $(DESTDIR)$(MANDIR)/man1/crawld.1
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' docs/crawld.service.in \
	  > $(DESTDIR)$(UNITDIR)/crawld.service && chmod 644 $(DESTDIR)$(UNITDIR)/crawld.service
	$(BIN)/crawld check-config --defaults > $(DESTDIR)$(DOCDIR)/crawl.toml
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/README.md
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/crawld/crawl.toml ]; then \
	  echo "make install: kept $(DESTDIR)$(SYSCONFDIR)/crawld/crawl.toml"; \
	else \
	  install -d $(DESTDIR)$(SYSCONFDIR)/crawld && \
	  install -m 644 $(DESTDIR)$(DOCDIR)/crawl.toml $(DESTDIR)$(SYSCONFDIR)/crawld/crawl.toml; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/crawld $(DESTDIR)$(MANDIR)/man1/crawld.1 \
	  $(DESTDIR)$(UNITDIR)/crawld.service $(DESTDIR)$(DOCDIR)/crawl.toml $(DESTDIR)$(DOCDIR)/README.md
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null
	@echo "make uninstall: $(SYSCONFDIR)/crawld/crawl.toml and /var/lib/crawld are left as they are"

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)
