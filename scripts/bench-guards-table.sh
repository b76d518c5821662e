#!/usr/bin/env bash
# Verdicts of `hoop guard act` next to cc-safety-net (paranoid), on every row
# of the act_guard table (guards/tests/data/act/*.tsv), in one run.
# Prints, per class of command and per rule family, for natural and
# adversarial rows apart: destructive rows blocked / total, and harmless rows
# wrongly blocked / total, for both tools.
#
#   scripts/bench-guards-table.sh
#   BENCH_DIR=/tmp/x JOBS=2 scripts/bench-guards-table.sh
#   HOOP_BIN=/path/to/hoop scripts/bench-guards-table.sh   # skip the build
#
# cc-safety-net is installed with npm into $BENCH_DIR (a temp dir outside the
# repository by default) and run as `cc-safety-net hook --coding-cli` with
# CC_SAFETY_NET_LEVEL=paranoid and a private HOME. Every hoop row runs with
# all rules armed, no working directory in the payload and TMPDIR unset, as
# the table is written; cc-safety-net gets an existing working directory
# (it refuses every command without one).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bench_dir=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hoop-table.XXXXXX")}
peer_version=${CC_SAFETY_NET_VERSION:-2.4.5}
jobs=${JOBS:-2}

if [ -n "${HOOP_BIN:-}" ]; then
  hoop=$HOOP_BIN # a hoop binary built elsewhere (e.g. another revision)
else
  echo "== building hoop (release, scripts/build-release.sh)" >&2
  hoop=$("$repo/scripts/build-release.sh")
fi

peer="$bench_dir/node_modules/.bin/cc-safety-net"
if [ ! -x "$peer" ]; then
  echo "== installing cc-safety-net@$peer_version into $bench_dir" >&2
  (cd "$bench_dir" && npm install --silent --no-audit --no-fund "cc-safety-net@$peer_version" >&2)
fi
mkdir -p "$bench_dir/work" "$bench_dir/home" "$bench_dir/root"

python3 - "$repo/guards/tests/data/act" "$repo/guards/tests/data/claude_pretooluse.json" \
  "$hoop" "$peer" "$bench_dir" "$jobs" <<'PY'
import collections, concurrent.futures, json, os, subprocess, sys

table, payload_file, hoop, peer, bench, jobs = sys.argv[1:7]
base = json.load(open(payload_file))
rows = []
for name in sorted(f for f in os.listdir(table) if f.endswith(".tsv")):
    for line in open(os.path.join(table, name), encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        want, cls, origin, cmd = line.split("\t", 3)
        rows.append((want, cls, origin, cmd.replace("⏎", "\n")))

env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "HOOP_AGENT", "HOOP_HOME")}
env["HOOP_ROOT"] = os.path.join(bench, "root")
peer_env = dict(env, HOME=os.path.join(bench, "home"), CC_SAFETY_NET_LEVEL="paranoid")

def hoop_blocks(cmd):
    p = dict(base)
    p.pop("cwd", None)
    p["tool_input"] = {"command": cmd, "description": "table"}
    out = subprocess.run([hoop, "guard", "act", "--format", "json"], input=json.dumps(p).encode(),
                         capture_output=True, env=env).stdout
    return b'"deny"' in out

def peer_blocks(cmd):
    p = dict(base)
    p["cwd"] = os.path.join(bench, "work")
    p["transcript_path"] = os.path.join(bench, "work", "transcript.jsonl")
    p["tool_input"] = {"command": cmd, "description": "table"}
    r = subprocess.run([peer, "hook", "--coding-cli"], input=json.dumps(p).encode(),
                       capture_output=True, env=peer_env)
    return b'"deny"' in r.stdout or r.returncode == 2

with concurrent.futures.ThreadPoolExecutor(max_workers=int(jobs)) as ex:
    ours = list(ex.map(hoop_blocks, [r[3] for r in rows]))
    theirs = list(ex.map(peer_blocks, [r[3] for r in rows]))

def report(title, key):
    groups = collections.OrderedDict()
    for (want, cls, origin, cmd), h, p in zip(rows, ours, theirs):
        g = groups.setdefault((key(want, cls), origin), [0, 0, 0, 0, 0, 0])
        if want != "allow":
            g[0] += 1; g[1] += h; g[2] += p
        else:
            g[3] += 1; g[4] += h; g[5] += p
    print(f"\n{title}")
    print(f"{'':<20} {'origin':<12} {'blocked: hoop':>14} {'cc-safety-net':>14}   {'false blocks: hoop':>19} {'cc-safety-net':>14}")
    for (name, origin), (n, h, p, a, fh, fp) in sorted(groups.items()):
        blk = lambda x: f"{x}/{n}" if n else "-"
        fal = lambda x: f"{x}/{a}" if a else "-"
        print(f"{name:<20} {origin:<12} {blk(h):>14} {blk(p):>14}   {fal(fh):>19} {fal(fp):>14}")

def pct(a, b):
    return f"{100.0 * a / b:.1f} %" if b else "-"

report("per class of command", lambda want, cls: cls)
report("per rule family (the rule a destructive row must meet; `allow` rows under allow)", lambda want, cls: want)
print("\ntotals")
for origin in ("natural", "adversarial"):
    sel = [(r, h, p) for r, h, p in zip(rows, ours, theirs) if r[2] == origin]
    bad = [(h, p) for r, h, p in sel if r[0] != "allow"]
    good = [(h, p) for r, h, p in sel if r[0] == "allow"]
    print(f"{origin:<12} destructive blocked: hoop {sum(h for h, _ in bad)}/{len(bad)} ({pct(sum(h for h, _ in bad), len(bad))}),"
          f" cc-safety-net {sum(p for _, p in bad)}/{len(bad)} ({pct(sum(p for _, p in bad), len(bad))});"
          f" harmless blocked: hoop {sum(h for h, _ in good)}/{len(good)} ({pct(sum(h for h, _ in good), len(good))}),"
          f" cc-safety-net {sum(p for _, p in good)}/{len(good)} ({pct(sum(p for _, p in good), len(good))})")
missed = [r[3] for r, h, p in zip(rows, ours, theirs) if r[0] != "allow" and not h]
wrong = [r[3] for r, h, p in zip(rows, ours, theirs) if r[0] == "allow" and h]
print(f"\nhoop rows off the table's verdict: {len(missed)} missed, {len(wrong)} wrongly blocked")
for c in missed + wrong:
    print("  ", repr(c))
PY
