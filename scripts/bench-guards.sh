#!/usr/bin/env bash
# Whole-process timing of `hoop guard act` next to cc-safety-net, on the same
# Claude Code PreToolUse payloads, in one run. Prints each tool's median wall
# time per payload, the median over all payloads, and the ratio; then hoop's
# CPU time per call over /bin/true's (the figure the hook's budget is set
# in); then, with valgrind, instructions per call.
#
#   scripts/bench-guards.sh            # uses hyperfine when installed
#   BENCH_DIR=/tmp/x RUNS=200 CPU_RUNS=2000 scripts/bench-guards.sh
#   COMPARE="dynamic=/path/to/hoop other=/path/to/hoop" scripts/bench-guards.sh
#
# hoop is built by scripts/build-release.sh, as it ships. COMPARE adds other
# hoop binaries (another build, another revision) to the CPU and
# instruction tables. cc-safety-net is installed with npm into $BENCH_DIR (a
# temp dir outside the repository by default). Without hyperfine a plain
# timing loop is used. Instruction counts (callgrind, the loader included)
# do not move with the machine's load: they are the figure to compare
# builds by; CPU time is what the agent waits for.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bench_dir=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hoop-bench.XXXXXX")}
runs=${RUNS:-100}
cpu_runs=${CPU_RUNS:-1000}
peer_version=${CC_SAFETY_NET_VERSION:-2.4.5}
mkdir -p "$bench_dir"

echo "== building hoop (release, scripts/build-release.sh)" >&2
built=$("$repo/scripts/build-release.sh")

# Every binary measured is copied into the bench directory first, so that
# all are read from the page cache in the same state. On a virtual machine
# whose host pages out idle memory, a binary left unused for some minutes
# came back slower: the same hoop took 0.4 ms more CPU per call than a
# fresh copy of itself, which would swamp any comparison.
bin="$bench_dir/bin"
rm -rf "$bin"
mkdir -p "$bin"
cp "$built" "$bin/hoop"
cp "$(type -P true)" "$bin/true"
compare=()
for spec in ${COMPARE:-}; do
  name=${spec%%=*}
  cp "${spec#*=}" "$bin/hoop-$name"
  compare+=("$name")
done
hoop="$bin/hoop"
true_bin="$bin/true"

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
ir_compare="$bench_dir/ir-compare.tsv"
: > "$results"
: > "$ir_compare"

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
      -n true "'$true_bin' < '$payload'" \
      -n hoop "'$hoop' guard act --format json < '$payload'" \
      -n cc-safety-net "'$peer' hook --claude-code < '$payload'" > /dev/null 2>&1
    read -r t h p < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(" ".join("%.3f" % (x["median"]*1000) for x in r))' "$json")
  else
    t=$(median_loop "$payload" "$true_bin")
    h=$(median_loop "$payload" "$hoop" guard act --format json)
    p=$(median_loop "$payload" "$peer" hook --claude-code)
  fi
  ir_h=- ir_t=-
  if command -v valgrind > /dev/null; then
    ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" < "$payload" 2>&1 >/dev/null \
      | awk '/Collected/ {print $4}'; }
    ir_h=$(ir "$hoop" guard act --format json)
    ir_t=$(ir "$true_bin")
    for cname in ${compare[@]+"${compare[@]}"}; do
      printf '%s\t%s\t%s\n' "$cname" "$name" \
        "$(ir "$bin/hoop-$cname" guard act --format json)" >> "$ir_compare"
    done
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$h" "$p" "$ours" "$theirs" "$t" "$ir_h" "$ir_t" >> "$results"
done
# The binary's size and how it is linked (scripts/build-release.sh says why).
linkage=$(file -b "$hoop" 2>/dev/null | grep -oE 'static-pie linked|statically linked|dynamically linked' || echo "linkage unknown")
echo "hoop binary: $(stat -c %s "$hoop") bytes, $linkage ($built)"

python3 - "$results" "$runs" "$ir_compare" <<'PY'
import collections, statistics, sys
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
    others = collections.defaultdict(dict)
    for l in open(sys.argv[3]):
        if l.strip():
            build, payload, n = l.rstrip("\n").split("\t")
            others[build][payload] = int(n)
    print()
    print("instructions per hook call (callgrind, loader included)")
    print(f"{'payload':<18} {'hoop':>12} {'/bin/true':>12} {'hoop - true':>12}" + "".join(f" {b:>14}" for b in others))
    for r in rows:
        h, t = int(r[6]), int(r[7])
        print(f"{r[0]:<18} {h:>12,} {t:>12,} {h - t:>12,}" + "".join(f" {others[b].get(r[0], 0):>14,}" for b in others))
PY

# CPU time per call (user + system, from the kernel's accounting of each
# child), every binary in turn on the same payload so that a change in the
# machine's load falls on all of them alike.
cpu_args=("$cpu_runs" "$true_bin" "$hoop")
for cname in ${compare[@]+"${compare[@]}"}; do cpu_args+=("$bin/hoop-$cname"); done
python3 - "$payloads" "${cpu_args[@]}" <<'PY'
import os, statistics, sys
payload_dir, runs, true_bin, *hoops = sys.argv[1:]
runs = int(runs)
names = ["hoop"] + [os.path.basename(h)[len("hoop-"):] for h in hoops[1:]]
devnull = os.open(os.devnull, os.O_WRONLY)
def cpu_ms(argv, payload):
    fd = os.open(payload, os.O_RDONLY)
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[
        (os.POSIX_SPAWN_DUP2, fd, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
        (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, _, ru = os.wait4(pid, 0)
    os.close(fd)
    return (ru.ru_utime + ru.ru_stime) * 1000
print()
print(f"CPU time per hook call over /bin/true's (mean of {runs} runs each, ms)")
print(f"{'payload':<18} {'/bin/true':>10}" + "".join(f" {'+' + n:>12}" for n in names))
overs = {n: [] for n in names}
for f in sorted(os.listdir(payload_dir)):
    payload = os.path.join(payload_dir, f)
    argvs = [[true_bin]] + [[h, "guard", "act", "--format", "json"] for h in hoops]
    times = [[] for _ in argvs]
    for i in range(runs + 5):
        for k, argv in enumerate(argvs):
            t = cpu_ms(argv, payload)
            if i >= 5:  # the first runs warm the page cache
                times[k].append(t)
    means = [statistics.mean(t) for t in times]
    for n, m in zip(names, means[1:]):
        overs[n].append(m - means[0])
    print(f"{f[:-5]:<18} {means[0]:>10.3f}" + "".join(f" {m - means[0]:>+12.3f}" for m in means[1:]))
print(f"{'median':<18} {'':>10}" + "".join(f" {statistics.median(overs[n]):>+12.3f}" for n in names))
PY
