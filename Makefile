# rlock -- run a command while holding a lock in Redis.
#
# Variables you may override:
#   CC, CFLAGS (default -O2 -g), CPPFLAGS, LDFLAGS (from the environment
#   too: dpkg-buildflags' hardening flags reach every compile and link),
#   PREFIX (/usr/local), DESTDIR, BINDIR, MANDIR, BASHCOMPDIR, ZSHCOMPDIR,
#   FISHCOMPDIR, SYSCONFDIR, STATIC (see below), WERROR=1 (warnings are
#   errors; CI).
# Targets: all, check, demo, asan, valgrind, check-topology,
# check-distributed, torture, fuzz, bench, bench-topo, install, uninstall,
# deb, check-deb, clean.

CC       ?= cc
CFLAGS   ?= -O2 -g
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
MANDIR   ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# Debian's zsh reads vendor-completions under /usr, site-functions elsewhere.
ZSHCOMPDIR  ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/share/zsh/vendor-completions,$(PREFIX)/share/zsh/site-functions)
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# The system's rlock.conf is $(SYSCONFDIR)/rlock.conf, whatever PREFIX is.
SYSCONFDIR  ?= /etc

# Our flags stay apart from the user's CFLAGS, and come first: the user's
# may override them. -Werror only when asked: a compiler newer than ours
# warns of new things, and a user's build should not stop for that.
RL_WERROR = $(if $(filter 1,$(WERROR)),-Werror)
RL_CFLAGS = -std=gnu11 -D_GNU_SOURCE -Wall -Wextra $(RL_WERROR) -Wshadow \
	-Wstrict-prototypes -Wmissing-prototypes -Wwrite-strings -Wformat=2 \
	-Wvla -Wpointer-arith -Wno-missing-field-initializers \
	-Isrc -I$(BUILD) -MMD -MP
# Full RELRO: every symbol bound at start, and the table then read-only.
# A run calls most of what it imports, so binding it all at once also
# costs less than a first call through the lazy resolver each.
RL_LDFLAGS = -Wl,-z,relro -Wl,-z,now
PKG_CFLAGS := $(shell pkg-config --cflags hiredis uuid openssl 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs hiredis uuid 2>/dev/null || echo -lhiredis -luuid)
# OpenSSL is not linked: src/tls_lib.c loads the system's libssl by its
# soname the first time a connection needs TLS (a plain run then maps
# neither it nor libcrypto), and its security fixes still reach rlock with
# the distribution's updates. A package must depend on it by hand
# (Debian: libssl3): the link no longer shows it to dpkg-shlibdeps.
DL_LIBS    := -ldl
# STATIC=1 links hiredis and libuuid into rlock from their .a files
# (libhiredis-dev and uuid-dev ship them): a run then maps and relocates
# one shared library (libc) instead of three, 17 page faults fewer of
# ~190 (make bench). STATIC=0 links the shared libraries, as a
# distribution that wants a hiredis update to reach rlock would. The
# default is 1 when both .a files are where the link would take them:
# in pkg-config's -L directories when it names any (a hiredis 1.x under
# /usr/local must not be replaced by Debian's 0.14 .a), else in the
# compiler's own.
PKG_LDIRS := $(patsubst -L%,%,$(filter -L%,$(PKG_LIBS)))
static_lib = $(if $(PKG_LDIRS),$(firstword $(wildcard $(PKG_LDIRS:%=%/lib$(1).a))),$(wildcard $(shell $(CC) -print-file-name=lib$(1).a)))
STATIC ?= $(if $(and $(call static_lib,hiredis),$(call static_lib,uuid)),1,0)
ifeq ($(STATIC),1)
LIBS = -Wl,-Bstatic $(PKG_LIBS) -Wl,-Bdynamic $(DL_LIBS) -pthread
else
LIBS = $(PKG_LIBS) $(DL_LIBS) -pthread
endif

BUILD ?= build
LUA   = $(sort $(wildcard src/lua/*.lua))
LIB_SRC = src/acl.c src/cli.c src/conffile.c src/config.c src/conn.c \
	src/glob.c src/guard.c src/keys.c src/lock.c \
	src/quorum.c src/renew.c src/reply.c src/report.c src/report_prom.c \
	src/report_view.c src/resolve.c src/run.c src/script.c src/script_args.c \
	src/server.c src/sig.c src/single.c src/supervise.c src/tls.c \
	src/tls_lib.c src/tls_why.c src/tls_wire.c src/url.c src/user.c \
	src/util.c src/view.c src/wait.c src/waitline.c src/wake.c \
	src/wake_pop.c src/wake_sub.c src/watch.c \
	src/section.c src/mode.c src/mode_rlock.c src/mode_redisson.c
LIB_OBJ = $(LIB_SRC:src/%.c=$(BUILD)/%.o) $(BUILD)/lua_scripts.o
BIN = rlock

.DELETE_ON_ERROR:

.PHONY: all check check-unit check-bats check-docs check-topology \
	check-distributed demo asan valgrind install uninstall clean deps \
	deps-demo bench \
	bench-topo hiredis-match deb check-deb

all: $(BIN)

$(BIN): $(BUILD)/main.o $(LIB_OBJ)
	$(CC) $(CFLAGS) $(RL_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/%.o: src/%.c $(BUILD)/lua_scripts.h | $(BUILD) hiredis-match
	$(CC) $(RL_CFLAGS) $(PKG_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# The hiredis header the compiler finds must be the library's version: a
# hiredis 1.x .pc adds only -I.../include/hiredis, so <hiredis/hiredis.h>
# can still come from another copy (Debian's 0.14 in /usr/include), and
# the binary then fails every connection. Checked on every build, before
# compiling, with the flags the objects get; no .pc, no check.
HIREDIS_PROBE = '\#include <hiredis/hiredis.h>\nrlock_hiredis HIREDIS_MAJOR HIREDIS_MINOR HIREDIS_PATCH\n'
hiredis-match:
	@lib=$$(pkg-config --modversion hiredis 2>/dev/null) || exit 0; \
	hdr=$$(printf $(HIREDIS_PROBE) | $(CC) $(filter-out -MMD -MP,$(RL_CFLAGS)) \
		$(PKG_CFLAGS) $(CPPFLAGS) $(CFLAGS) -E -P -x c - 2>/dev/null | \
		sed -n 's/^rlock_hiredis \([0-9]*\) \([0-9]*\) \([0-9]*\)$$/\1.\2.\3/p'); \
	[ "$$hdr" = "$$lib" ] || { echo "rlock: hiredis: the header is \
	$${hdr:-not found} but pkg-config's library is $$lib: put its include \
	directory's parent first (CFLAGS=-I.../include)" >&2; exit 1; }

$(BUILD)/lua_scripts.o: $(BUILD)/lua_scripts.c
	$(CC) $(RL_CFLAGS) $(PKG_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# The shared local functions of src/lua/lib/ a script calls go in front of
# it (src/lua-text.sh).
LUA_LIB = $(sort $(wildcard src/lua/lib/*.lua))

# One run makes both (&:): under make -j two runs raced on its temp files.
# An older make would read &: as a plain rule and race again: stop there.
ifeq ($(filter grouped-target,$(.FEATURES)),)
$(error GNU make 4.3 or later is needed (grouped targets))
endif
$(BUILD)/lua_scripts.c $(BUILD)/lua_scripts.h &: $(LUA) $(LUA_LIB) \
		src/embed-lua.sh src/lua-text.sh | $(BUILD)
	sh src/embed-lua.sh $(BUILD)/lua_scripts.c $(BUILD)/lua_scripts.h \
		src/lua/lib $(LUA)

$(BUILD):
	mkdir -p $(BUILD)

# -MMD makes headers prerequisites too: hand cc only the sources.
$(BUILD)/unit: tests/unit/unit.c $(LIB_OBJ)
	$(CC) $(RL_CFLAGS) $(PKG_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ \
		$(filter %.c %.o,$^) $(LIBS)

# Installs missing packages (as root, or with sudo from a terminal),
# else prints the apt-get line. deps-demo: only the build's and the demo's.
deps:
	@sh .ci/deps

deps-demo:
	@sh .ci/deps demo

check-unit: $(BUILD)/unit
	$(BUILD)/unit

check-bats: $(BIN)
	RLOCK=$(CURDIR)/$(BIN) bash tests/run-bats

check-docs:
	sh tests/check-docs

# The whole suite; the last line is "N passed, N failed".
check: deps
	@$(MAKE) --no-print-directory all $(BUILD)/unit
	@sh tests/run-all $(CURDIR)/$(BIN) $(CURDIR)/$(BUILD)/unit

# The slower suites, each with its own target (tests/run-suite: the last
# line is "N passed, N failed"; a file that reports less than it planned
# fails). check-topology: Sentinel, Cluster and Redlock, plain and over
# TLS, each against servers it builds (about 4 minutes).
# check-distributed: tests/mx.sh's mutual-exclusion workload on those
# topologies, quiet and under faults (a few minutes).
check-topology: deps all
	@RLOCK=$(CURDIR)/$(BIN) sh tests/run-suite topology tests/topology/*.bats

check-distributed: deps all
	@RLOCK=$(CURDIR)/$(BIN) sh tests/run-suite distributed \
		tests/distributed/*.bats

# AddressSanitizer + UBSan build of everything, then the whole suite.
SAN_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer -O1 -g
asan: deps
	@$(MAKE) --no-print-directory BUILD=build/asan BIN=build/asan/rlock \
		CFLAGS="$(SAN_FLAGS)" LDFLAGS="$(SAN_FLAGS)" build/asan/rlock \
		build/asan/unit
	rm -rf build/asan/logs && mkdir -p build/asan/logs
	ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:log_path=$(CURDIR)/build/asan/logs/asan \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/build/asan/logs/ubsan \
		sh tests/run-all $(CURDIR)/build/asan/rlock $(CURDIR)/build/asan/unit
	@# A report a test did not notice still fails the target.
	@if ls build/asan/logs | grep -q .; then cat build/asan/logs/*; \
		echo "sanitizer reports above"; exit 1; fi; echo "no sanitizer reports"


# valgrind memcheck under the whole suite: $RLOCK becomes a wrapper, an
# error or a leak turns rlock's status into 99, and every report is kept.
# The log is opened by the wrapper on fd 9, named after its uid and PID
# (which valgrind keeps): another user's run must not meet a root-owned
# log of a recycled PID in the sticky directory. --log-file would leave
# it on the lowest free fd, a standard fd the test closed, which rlock
# would then find open.
# The tests scale their timings by TIME_FACTOR (5 under valgrind). The
# log directory is sticky and open to all: a test runs rlock as nobody.
VG_DIR = $(CURDIR)/build/valgrind
valgrind: deps all $(BUILD)/unit
	rm -rf $(VG_DIR) && mkdir -p $(VG_DIR)/logs && chmod 1777 $(VG_DIR)/logs
	printf '#!/bin/sh\nexec 9>>$(VG_DIR)/logs/$$(id -u).$$$$.log\nexec valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --log-fd=9 $(CURDIR)/$(BIN) "$$@"\n' > $(VG_DIR)/rlock
	printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --log-file=$(VG_DIR)/logs/unit.log $(CURDIR)/$(BUILD)/unit "$$@"\n' > $(VG_DIR)/unit
	chmod +x $(VG_DIR)/rlock $(VG_DIR)/unit
	RLOCK_UNDER_VALGRIND=1 sh tests/run-all $(VG_DIR)/rlock $(VG_DIR)/unit
	@# valgrind before 3.20 does not know pidfd_open (434), which a holder
	@# of rlock lock tries first and does without: not a report.
	@find $(VG_DIR)/logs -type f -size +0 -exec \
		sed -i '/unhandled amd64-linux syscall: 434$$/,+4d' {} +
	@if find $(VG_DIR)/logs -type f -size +0 | grep -q .; then \
		cat $$(find $(VG_DIR)/logs -type f -size +0); \
		echo "valgrind reports above"; exit 1; fi; echo "no valgrind reports"

demo: deps-demo
	@$(MAKE) --no-print-directory all
	sh tests/demo.sh $(CURDIR)/$(BIN)

# Every figure of issue 13's table in one run (about 5 minutes), each next
# to what runs beside it: flock(1), the seed protocol (bench/seed.c), one
# node. BASE=/path/to/old/rlock adds that binary as a column in the same
# rounds; SHORT=1 is a quick try with rough figures; ONLY="cpu rss" runs
# only those sections (see bench/run.sh).
bench: deps all
	BASE="$(BASE)" bash bench/run.sh $(CURDIR)/$(BIN)

# The same figures on Sentinel, Cluster and Redlock, next to one node.
bench-topo: deps all
	bash bench/topo.sh $(CURDIR)/$(BIN)

# Every manual page of man/, each in the section its suffix names.
MAN_PAGES = $(sort $(wildcard man/*.[1-9]))
MAN_PATHS = $(foreach m,$(MAN_PAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))

install: $(BIN)
	install -D -m 755 $(BIN) $(DESTDIR)$(BINDIR)/rlock
	for m in $(MAN_PAGES); do \
		install -D -m 644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/} \
			|| exit; \
	done
	install -D -m 644 completions/rlock.bash $(DESTDIR)$(BASHCOMPDIR)/rlock
	install -D -m 644 completions/_rlock $(DESTDIR)$(ZSHCOMPDIR)/_rlock
	install -D -m 644 completions/rlock.fish $(DESTDIR)$(FISHCOMPDIR)/rlock.fish

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/rlock \
		$(addprefix $(DESTDIR),$(MAN_PATHS)) \
		$(DESTDIR)$(BASHCOMPDIR)/rlock $(DESTDIR)$(ZSHCOMPDIR)/_rlock \
		$(DESTDIR)$(FISHCOMPDIR)/rlock.fish

# The Debian package (debian/): its .deb, source package, .changes and
# the build's log in build/deb/. dpkg-buildpackage builds in the tree it
# is given, writes its files next to that tree, and its clean step removes
# build/: it is given a copy of this tree (what git would commit: .git and
# the ignored files left out) in a temporary directory. make's command
# line and these variables in the environment do not reach it (make
# exports its command line's): the package's flags are debian/rules' and
# dpkg-buildflags' (DEB_CFLAGS_APPEND=... and the like change them).
# DEB_BUILD_OPTS=-b builds the binary package only.
DEB_DIR = build/deb
DEB_BUILD_OPTS =
DEB_UNSET = MAKEFLAGS MFLAGS MAKELEVEL CC CFLAGS CPPFLAGS LDFLAGS WERROR \
	STATIC PREFIX DESTDIR BINDIR MANDIR BASHCOMPDIR ZSHCOMPDIR FISHCOMPDIR \
	BUILD BIN
deb:
	@rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR) && \
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	src=$$tmp/rlock-$$(dpkg-parsechangelog -S Version) && mkdir "$$src" && \
	tar -c --exclude-vcs --exclude-vcs-ignores -f - . | \
		tar -x -C "$$src" && \
	echo "dpkg-buildpackage -us -uc$(DEB_BUILD_OPTS:%= %) (log: $(DEB_DIR)/build.log)" && \
	if ! (cd "$$src" && env $(DEB_UNSET:%=-u %) \
		dpkg-buildpackage -us -uc $(DEB_BUILD_OPTS)) \
		> $(DEB_DIR)/build.log 2>&1; \
	then tail -n 30 $(DEB_DIR)/build.log; \
		echo "rlock: make deb: dpkg-buildpackage failed" >&2; exit 1; fi && \
	find "$$tmp" -maxdepth 1 -type f -exec mv {} $(DEB_DIR)/ \; && \
	ls $(DEB_DIR)/*.deb

# The package checked (tests/deb/): built, lintian, its files unpacked;
# the last line is "N passed, N failed".
check-deb: deps
	@sh tests/run-suite deb tests/deb/*.bats

clean:
	rm -rf build $(BIN)

-include $(wildcard $(BUILD)/*.d)

$(BUILD)/conffile.o: RL_CFLAGS += -DSYSCONFDIR='"$(SYSCONFDIR)"'

# ---------------------------------------------------------------- fuzz
# libFuzzer targets (tests/fuzz/fuzz_*.c; issue 6), apart from the rest:
# `make fuzz` builds them with clang into build/fuzz/, then runs each for
# FUZZ_SECONDS on a copy of tests/fuzz/corpus/<target>/ (the committed
# seeds stay as they are) and prints its executions. Any crash, leak, hang
# or sanitizer report fails it and leaves the input in build/fuzz/crashes/.
# Not part of check: it needs clang's libFuzzer runtime, which
# tests/fuzz/deps installs when root (else prints the apt-get line).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_DIR      = build/fuzz
FUZZ_TARGETS  = fuzz_url fuzz_dur fuzz_cli fuzz_reply fuzz_redirect
FUZZ_FLAGS    = -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_OBJ      = $(LIB_SRC:src/%.c=$(FUZZ_DIR)/%.o) $(FUZZ_DIR)/lua_scripts.o
FUZZ_BIN      = $(FUZZ_TARGETS:%=$(FUZZ_DIR)/%)

.PHONY: fuzz fuzz-build fuzz-deps
# Made for a pattern rule only, they would count as intermediate: keep them.
.SECONDARY: $(FUZZ_OBJ)

fuzz: fuzz-build
	sh tests/fuzz/run $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_BIN)

fuzz-deps:
	@FUZZ_CC=$(FUZZ_CC) sh tests/fuzz/deps

$(FUZZ_DIR)/%.o: src/%.c $(BUILD)/lua_scripts.h | $(FUZZ_DIR)
	$(FUZZ_CC) $(RL_CFLAGS) $(PKG_CFLAGS) $(FUZZ_FLAGS) -c -o $@ $<

$(FUZZ_DIR)/lua_scripts.o: $(BUILD)/lua_scripts.c | $(FUZZ_DIR)
	$(FUZZ_CC) $(RL_CFLAGS) $(PKG_CFLAGS) $(FUZZ_FLAGS) -c -o $@ $<

# Every target links all of rlock but main.o, as build/unit does.
$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(RL_CFLAGS) $(PKG_CFLAGS) $(FUZZ_FLAGS) -o $@ \
		$(filter %.c %.o,$^) $(LIBS)

$(FUZZ_DIR):
	mkdir -p $(FUZZ_DIR)

-include $(wildcard $(FUZZ_DIR)/*.d)

# ---------------------------------------------------------------- torture
# Mutual exclusion under faults (tests/torture/; issue 6), apart from check:
# 16 contending workers per scenario, each with a private redis-server, under
# SIGKILL/SIGSTOP of rlock, SIGSTOP/restarts of redis-server, CLIENT PAUSE,
# CLIENT KILL, maxclients and a stalled or cut TCP proxy; every critical
# section is stamped on CLOCK_MONOTONIC and tests/torture/check.py checks the
# contract's guarantee and the fences. About three minutes with the default
# TORTURE_SECONDS=6 of contention per scenario; TORTURE_KEEP=1 keeps the logs.
# Needs redis-server, redis-cli and python3 (loopback only, no root).
.PHONY: torture
torture: $(BIN) $(BUILD)/torture-stamp
	TORTURE_STAMP=$(CURDIR)/$(BUILD)/torture-stamp \
		bash tests/torture/run.sh $(CURDIR)/$(BIN)

$(BUILD)/torture-stamp: tests/torture/stamp.c | $(BUILD)
	$(CC) $(RL_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ tests/torture/stamp.c
