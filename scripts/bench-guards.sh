#!/usr/bin/env bash
# Whole-process timing of `hoop guard act` next to cc-safety-net, on the same
# Claude Code PreToolUse payloads, in one run. Prints each tool's median per
# payload, the median over all payloads, and the ratio.
#
#   scripts/bench-guards.sh            # uses hyperfine when installed
#   BENCH_DIR=/tmp/x RUNS=200 scripts/bench-guards.sh
#
# cc-safety-net is installed with npm into $BENCH_DIR (a temp dir outside the
# repository by default). Without hyperfine a plain timing loop is used.
# With valgrind installed, each payload's instruction count (callgrind, the
# dynamic loader included) is printed too: unlike wall time it does not move
# with the machine's load, so it is the figure to compare profiles by.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bench_dir=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hoop-bench.XXXXXX")}
runs=${RUNS:-100}
peer_version=${CC_SAFETY_NET_VERSION:-2.4.5}

echo "== building hoop (release)" >&2
(cd "$repo" && cargo build --release --quiet --bin hoop)
target_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
hoop="$target_dir/release/hoop"

peer="$bench_dir/node_modules/.bin/cc-safety-net"
if [ ! -x "$peer" ]; then
  echo "== installing cc-safety-net@$peer_version into $bench_dir" >&2
  (cd "$bench_dir" && npm install --silent --no-audit --no-fund "cc-safety-net@$peer_version" >&2)
fi

# The payloads: the captured Claude Code shape with different commands.
payloads="$bench_dir/payloads"
mkdir -p "$payloads"
mkdir -p "$bench_dir/work"
python3 - "$repo/guards/tests/data/claude_pretooluse.json" "$payloads" "$bench_dir/work" <<'PY'
import json, sys
base = json.load(open(sys.argv[1]))
# A working directory that exists (cc-safety-net fails closed without one).
base["cwd"] = sys.argv[3]
base["transcript_path"] = sys.argv[3] + "/transcript.jsonl"
cases = {
    "allow_simple": "git status",
    "allow_pipeline": "grep -rn 'rm -rf' src | sort | head -20",
    "block_rm_home": "rm -rf ~",
    "block_force_push": "git push --force origin main",
    "nested_bash_c": "cd /srv/app && bash -c 'echo start; sudo env FOO=1 rm -rf /var/lib/app' && echo done",
    "heredoc_data": "cat <<'EOF' > notes.md\nrm -rf /\ngit push --force origin main\nEOF",
}
for name, cmd in cases.items():
    p = dict(base)
    p["tool_input"] = {"command": cmd, "description": "bench"}
    with open(f"{sys.argv[2]}/{name}.json", "w") as f:
        json.dump(p, f)
PY

# A private hoop root so the user's own act_guard config is not read.
export HOOP_ROOT="$bench_dir/root"
mkdir -p "$HOOP_ROOT"
results="$bench_dir/results.tsv"
: > "$results"

median_loop() { # median wall time in ms of running "$@" < $payload, $runs times
  local payload=$1; shift
  local i t0 t1 times=()
  for ((i = 0; i < runs; i++)); do
    t0=$(date +%s%N)
    "$@" < "$payload" > /dev/null 2>&1 || true
    t1=$(date +%s%N)
    times+=($(( t1 - t0 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f\n", m/1e6}'
}

for payload in "$payloads"/*.json; do
  name=$(basename "$payload" .json)
  # Same verdict? (informational: the rule sets differ in places)
  ours=$("$hoop" guard act --format json < "$payload" 2>/dev/null | grep -q '"deny"' && echo deny || echo allow)
  theirs=$("$peer" hook --claude-code < "$payload" 2>/dev/null | grep -q '"deny"' && echo deny || echo allow)
  if command -v hyperfine > /dev/null; then
    json="$bench_dir/$name.json.out"
    hyperfine --style none --warmup 5 --runs "$runs" -i --export-json "$json" \
      -n true "/bin/true < '$payload'" \
      -n hoop "'$hoop' guard act --format json < '$payload'" \
      -n cc-safety-net "'$peer' hook --claude-code < '$payload'" > /dev/null
    read -r t h p < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(" ".join("%.3f" % (x["median"]*1000) for x in r))' "$json")
  else
    t=$(median_loop "$payload" /bin/true)
    h=$(median_loop "$payload" "$hoop" guard act --format json)
    p=$(median_loop "$payload" "$peer" hook --claude-code)
  fi
  ir_h=- ir_t=-
  if command -v valgrind > /dev/null; then
    ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" < "$payload" 2>&1 >/dev/null \
      | awk '/Collected/ {print $4}'; }
    ir_h=$(ir "$hoop" guard act --format json)
    ir_t=$(ir /bin/true)
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$h" "$p" "$ours" "$theirs" "$t" "$ir_h" "$ir_t" >> "$results"
done
echo "hoop binary: $(stat -c %s "$hoop") bytes ($hoop)"

python3 - "$results" "$runs" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print(f"whole-process median wall time per hook call, {sys.argv[2]} runs each (ms)")
print(f"{'payload':<18} {'hoop':>8} {'cc-safety-net':>14} {'ratio':>7} {'/bin/true':>10}   verdicts (hoop / cc-safety-net)")
for name, h, p, ours, theirs, t, _, _ in rows:
    h, p, t = float(h), float(p), float(t)
    print(f"{name:<18} {h:>8.3f} {p:>14.3f} {p / h:>6.0f}x {t:>10.3f}   {ours} / {theirs}")
hm = statistics.median(float(r[1]) for r in rows)
pm = statistics.median(float(r[2]) for r in rows)
tm = statistics.median(float(r[5]) for r in rows)
print(f"{'median':<18} {hm:>8.3f} {pm:>14.3f} {pm / hm:>6.0f}x {tm:>10.3f}")
print("(/bin/true is the floor: the cost of starting any process here, measured the same way)")
if all(r[6] != "-" for r in rows):
    print()
    print("instructions per hook call (callgrind, loader included)")
    print(f"{'payload':<18} {'hoop':>12} {'/bin/true':>12} {'hoop - true':>12}")
    for r in rows:
        h, t = int(r[6]), int(r[7])
        print(f"{r[0]:<18} {h:>12,} {t:>12,} {h - t:>12,}")
PY
