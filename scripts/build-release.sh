#!/usr/bin/env bash
# Builds the release `hoop` the way it is meant to run and prints its path
# (target/release/hoop, or under CARGO_TARGET_DIR).
#
#   scripts/build-release.sh                      # static-pie on Linux/glibc
#   HOOP_LINK=dynamic scripts/build-release.sh    # a plain `cargo build --release`
#
# Why static-pie on Linux with glibc: the guard hooks start `hoop` before
# every tool call of every agent. Linked dynamically, each start loads libc,
# libm and libgcc_s, binds a few hundred symbols and applies 30,000
# relocations read from 0.7 MB of entries: 1,047,000 instructions and 295
# page faults per `hoop guard act` call, 1.13 ms of CPU over /bin/true.
# The same code static-pie: 667,000 instructions, 246 faults, +0.66 ms;
# with the relocations packed (DT_RELR): 641,000, 232, +0.61 ms
# (scripts/bench-guards.sh prints the figures for the binary it builds; CPU
# means of 2,000 calls each, one run, a 2-core virtual machine). It stays
# position independent, so the daemon's address space is still randomised:
# a fixed-address (non-PIE) build was faster again (+0.25 ms) and is not
# offered for that reason.
#
# What a static glibc changes, and when to choose HOOP_LINK=dynamic instead:
# host and user lookups through `files` and `dns` are built in; any other
# NSS source named in /etc/nsswitch.conf (mdns, resolve, sss, ldap…) is
# loaded at run time from the machine's glibc, which must be the one hoop
# was built against. Rebuild after upgrading glibc, or build dynamically on
# a machine whose backend host or users resolve only through such a source.
# Elsewhere (macOS, musl) this is a plain release build.
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
flags=()
if [ "${HOOP_LINK:-static}" != dynamic ]; then
    case "$host" in
        *-linux-gnu*)
            # GNU ld older than 2.38 warns about and ignores the -z option:
            # the binary is then static-pie with plain relocations.
            flags=(-C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs)
            ;;
    esac
fi

# `cargo rustc` hands the flags to the final binary only: proc-macro and
# build-script crates of the host cannot be built with crt-static.
cargo rustc --release --locked --quiet -p hoop --bin hoop -- ${flags[@]+"${flags[@]}"} >&2

target_dir=$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
echo "$target_dir/release/hoop"
