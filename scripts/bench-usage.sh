#!/usr/bin/env bash
# Benchmark `hoop usage` against ccusage 20 (the Rust rewrite) on a generated
# corpus, side by side in one run: totals, cost per model, cold-scan time,
# warm rerun time, peak RSS; `hoop statusline` against `ccusage statusline`
# on one payload (their lines and their times); the card snapshot hook's own
# cost; and the account snapshot's per-turn cost with 1, 100 and 1,000
# finished workers and a year of transcripts (examples/usage_turn_bench.rs).
# Everything it installs or generates lives under $BENCH_DIR (default
# /tmp/hoop-usage-bench), outside the repository.
#
#   scripts/bench-usage.sh                 # ~1.1 GiB in 5000 files
#   CORPUS_MB=200 CORPUS_FILES=800 scripts/bench-usage.sh
#
# Needs: cargo, npm, python3, /usr/bin/time (apt-get install -y time).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/hoop-usage-bench}
CORPUS_MB=${CORPUS_MB:-1100}
CORPUS_FILES=${CORPUS_FILES:-5000}
SEED=${SEED:-24301}
COLD_RUNS=${COLD_RUNS:-3}
WARM_RUNS=${WARM_RUNS:-10}
CCUSAGE_VERSION=20.0.24
CORPUS=$BENCH_DIR/corpus-$CORPUS_MB-$CORPUS_FILES-$SEED
mkdir -p "$BENCH_DIR"
# A hoop root of its own: no homes, no price overrides of the machine's.
export HOOP_ROOT=$BENCH_DIR/hoop-root

echo "== building (release)"
HOOP=$("$REPO/scripts/build-release.sh")
(cd "$REPO" && cargo build --release -q -p hoop-meter --example gen_corpus \
  && cargo build --release -q -p hoop --example usage_turn_bench)
TARGET=$(cd "$REPO" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
GEN=$TARGET/release/examples/gen_corpus
TURN_BENCH=$TARGET/release/examples/usage_turn_bench

echo "== ccusage $CCUSAGE_VERSION"
CCU_DIR=$BENCH_DIR/ccusage-$CCUSAGE_VERSION
if [ ! -x "$CCU_DIR/node_modules/.bin/ccusage" ]; then
  mkdir -p "$CCU_DIR"
  # The newest 20.0.26 ships no linux-x64 binary: name the platform package.
  (cd "$CCU_DIR" && npm init -y >/dev/null \
    && npm install --no-audit --no-fund "ccusage@$CCUSAGE_VERSION" "@ccusage/ccusage-linux-x64@$CCUSAGE_VERSION" >/dev/null)
fi
CCU=$CCU_DIR/node_modules/.bin/ccusage
CCU_HOME=$BENCH_DIR/ccusage-home   # so it finds no other agent's data
mkdir -p "$CCU_HOME"

echo "== corpus ($CORPUS_MB MB target, $CORPUS_FILES files)"
if [ ! -f "$CORPUS/expected.json" ]; then
  rm -rf "$CORPUS"
  "$GEN" "$CORPUS" "$CORPUS_MB" "$CORPUS_FILES" "$SEED" >/dev/null
fi
python3 - "$CORPUS" <<'PY'
import os, sys, statistics
sizes = [os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(sys.argv[1], "projects")) for f in fs if f.endswith(".jsonl")]
sizes.sort()
print(f"   {len(sizes)} files, {sum(sizes)/2**30:.2f} GiB, median {statistics.median(sizes)/1e3:.0f} KB, "
      f"largest {sizes[-1]/2**20:.0f} MB / {sizes[-2]/2**20:.0f} MB / {sizes[-3]/2**20:.0f} MB")
PY
# Old transcripts are old files: a user's history was not all written today
# (the status line reads only the last two days' files, by mtime).
find "$CORPUS/projects" -name '*.jsonl' -exec touch -d '40 days ago' {} +
# Same page-cache state for both tools: everything cached.
find "$CORPUS/projects" -name '*.jsonl' -exec cat {} + >/dev/null

# measure NAME RUNS CMD... → prints median seconds and max RSS; keeps stdout
# of the last run in $BENCH_DIR/NAME.json.
measure() {
  local name=$1 runs=$2; shift 2
  local times=() rss=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %M' -o "$BENCH_DIR/$name.time" "$@" >"$BENCH_DIR/$name.json" 2>"$BENCH_DIR/$name.err"
    read -r t m <"$BENCH_DIR/$name.time"
    times+=("$t"); [ "$m" -gt "$rss" ] && rss=$m
  done
  local med
  med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$name $med $rss" >>"$BENCH_DIR/results.txt"
}

rm -f "$BENCH_DIR/results.txt"
STATE=$BENCH_DIR/hoop-state.bin
export CLAUDE_CONFIG_DIR=$CORPUS
echo "== hoop cold ($COLD_RUNS runs)"
measure hoop_cold "$COLD_RUNS" "$HOOP" usage daily --json --no-cache
echo "== hoop warm ($WARM_RUNS runs after one priming run)"
rm -f "$STATE"
"$HOOP" usage daily --json --state "$STATE" >/dev/null
measure hoop_warm "$WARM_RUNS" "$HOOP" usage daily --json --state "$STATE"
if command -v hyperfine >/dev/null; then
  # /usr/bin/time counts in 10 ms steps; hyperfine resolves the warm rerun.
  hyperfine -N --warmup 2 --runs 30 --export-json "$BENCH_DIR/hoop_warm.hyperfine.json" \
    "$HOOP usage daily --json --state $STATE" >/dev/null
fi
echo "== hoop after one appended response (incremental)"
# Append one response to a mid-sized transcript, time the rerun, then cut
# the file back so the corpus stays as generated.
VICTIM=$(find "$CORPUS/projects" -name '*.jsonl' -size +100k -size -400k | sort | awk 'NR == 1')
ORIG_SIZE=$(stat -c %s "$VICTIM")
grep -m1 '"usage"' "$VICTIM" | sed 's/"id":"msg_/"id":"msg_bench_/' >>"$VICTIM"
measure hoop_append 1 "$HOOP" usage daily --json --state "$STATE"
truncate -s "$ORIG_SIZE" "$VICTIM"
"$HOOP" usage daily --json --state "$STATE" >/dev/null
echo "== ccusage cold/rerun ($COLD_RUNS runs; it keeps no state, so every run is cold)"
measure ccusage "$COLD_RUNS" env HOME="$CCU_HOME" "$CCU" daily --offline --json

echo "== totals"
python3 - "$BENCH_DIR" "$CORPUS" <<'PY'
import json, os, sys
bench, corpus = sys.argv[1], sys.argv[2]
ours = json.load(open(f"{bench}/hoop_cold.json"))["totals"]
warm = json.load(open(f"{bench}/hoop_warm.json"))["totals"]
theirs = json.load(open(f"{bench}/ccusage.json"))["totals"]
exp = json.load(open(f"{corpus}/expected.json"))
rows = [("input", "input_tokens", "inputTokens"),
        ("cache write", "cache_creation_input_tokens", "cacheCreationTokens"),
        ("cache read", "cache_read_input_tokens", "cacheReadTokens"),
        ("output", "output_tokens", "outputTokens")]
print(f"   {'kind':<12}{'generated':>16}{'hoop cold':>16}{'hoop warm':>16}{'ccusage':>16}")
ok = True
for name, k, ck in rows:
    print(f"   {name:<12}{exp[k]:>16,}{ours[k]:>16,}{warm[k]:>16,}{theirs[ck]:>16,}")
    ok &= exp[k] == ours[k] == warm[k] == theirs[ck]
print(f"   {'cost USD':<12}{'':>16}{ours['cost_usd']:>16.4f}{warm['cost_usd']:>16.4f}{theirs['totalCost']:>16.4f}")
print("   token totals identical:", "YES" if ok else "NO")

# Cost: an independent re-computation under both rules explains any gap.
P = {"claude-opus-4-6": (5, 6.25, 10, 0.5, 25, False), "claude-opus-4-8": (5, 6.25, 10, 0.5, 25, False),
     "claude-sonnet-4-5-20250929": (3, 3.75, 6, 0.3, 15, True), "claude-sonnet-4-6": (3, 3.75, 6, 0.3, 15, False),
     "claude-haiku-4-5-20251001": (1, 1.25, 2, 0.1, 5, False)}
best = {}
for d, _, fs in os.walk(os.path.join(corpus, "projects")):
    for f in fs:
        if not f.endswith(".jsonl"): continue
        for line in open(os.path.join(d, f), "rb"):
            if b'"usage"' not in line: continue
            try: j = json.loads(line)
            except Exception: continue
            m = j.get("message") or {}; u = m.get("usage")
            if not u: continue
            cc = u.get("cache_creation") or {}
            t = (u.get("input_tokens", 0), cc.get("ephemeral_5m_input_tokens", 0), cc.get("ephemeral_1h_input_tokens", 0),
                 u.get("cache_read_input_tokens", 0), u.get("output_tokens", 0))
            # One API response counts once: message id, else request id, else the line.
            key = ("m", m["id"]) if m.get("id") else ("r", j["requestId"]) if j.get("requestId") else ("l", f, len(best))
            if key not in best or sum(t) > sum(best[key][1]): best[key] = (m.get("model"), t)
anth = per_type = 0.0
for model, (i, w5, w1, r, o) in best.values():
    pi, p5, p1, pr, po, lc = P[model]
    f_in, f_out = (2.0, 1.5) if lc and i + w5 + w1 + r > 200_000 else (1.0, 1.0)
    anth += ((i*pi + w5*p5 + w1*p1 + r*pr) * f_in + o*po*f_out) / 1e6
    tier = lambda n, rate, f: n * rate if not lc else min(n, 200_000) * rate + max(n - 200_000, 0) * rate * f
    per_type += (tier(i, pi, 2) + tier(w5, p5, 2) + tier(w1, p1, 2) + tier(r, pr, 2) + tier(o, po, 1.5)) / 1e6
print(f"   cost recomputed, Anthropic rule (prompt > 200K => whole request at premium): {anth:.4f}"
      f"  {'= hoop' if abs(anth - ours['cost_usd']) < 1e-6 else '!= hoop'}")
print(f"   cost recomputed, per-token-type 200K tier (ccusage's rule):                 {per_type:.4f}"
      f"  {'= ccusage' if abs(per_type - theirs['totalCost']) < 1e-4 else '!= ccusage'}")
print(f"   ({exp['sonnet45_long_context_responses']} Sonnet 4.5 responses have a prompt over 200K tokens)")
skipped = json.load(open(f"{bench}/hoop_cold.json"))["skipped_lines"]
print(f"   hoop skipped lines: {skipped} (generated malformed: {exp['malformed_lines']})")
PY

echo "== cost per model (hoop usage daily --breakdown beside ccusage daily --breakdown)"
"$HOOP" usage daily --json --breakdown --state "$STATE" >"$BENCH_DIR/hoop_breakdown.json"
env HOME="$CCU_HOME" "$CCU" daily --offline --json --breakdown >"$BENCH_DIR/ccusage_breakdown.json"
python3 - "$BENCH_DIR" <<'PY'
import json, sys
bench = sys.argv[1]
ours, theirs = {}, {}
for row in json.load(open(f"{bench}/hoop_breakdown.json"))["rows"]:
    for m in row.get("breakdown", []):
        ours[m["model"]] = ours.get(m["model"], 0.0) + (m["cost_usd"] or 0.0)
doc = json.load(open(f"{bench}/ccusage_breakdown.json"))
for row in doc.get("daily", doc.get("data", [])):
    for m in row.get("modelBreakdowns", []):
        name = m.get("modelName") or m.get("model")
        theirs[name] = theirs.get(name, 0.0) + m.get("cost", m.get("totalCost", 0.0))
print(f"   {'model':<30}{'hoop USD':>14}{'ccusage USD':>14}{'diff':>12}")
for model in sorted(set(ours) | set(theirs)):
    a, b = ours.get(model, 0.0), theirs.get(model, 0.0)
    print(f"   {model:<30}{a:>14,.2f}{b:>14,.2f}{a - b:>12,.2f}")
a, b = sum(ours.values()), sum(theirs.values())
print(f"   {'total':<30}{a:>14,.2f}{b:>14,.2f}{a - b:>12,.2f}  ({(a - b) / b * 100:+.2f} %)")
PY

echo "== status line: hoop statusline beside ccusage statusline, one payload"
# Today's responses in a session transcript (copies of corpus responses,
# re-dated to the last hour, new ids), so 'today' and 'block' have figures.
TODAY_DIR=$CORPUS/projects/-bench-statusline-today
mkdir -p "$TODAY_DIR"
SRC=$(find "$CORPUS/projects" -name '*.jsonl' -size +100k -size -400k | sort | awk 'NR == 2')
python3 - "$SRC" "$TODAY_DIR/today.jsonl" <<'PY'
import json, sys, time, datetime
src, out = sys.argv[1], sys.argv[2]
now = time.time()
lines, n = [], 0
for line in open(src, encoding="utf-8"):
    if '"usage"' not in line: continue
    try: j = json.loads(line)
    except Exception: continue
    if not (j.get("message") or {}).get("usage"): continue
    n += 1
    t = datetime.datetime.fromtimestamp(now - 3600 + n * 30, datetime.timezone.utc)
    j["timestamp"] = t.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    j["message"]["id"] = f"msg_statusline_{n}"
    j["requestId"] = f"req_statusline_{n}"
    j["sessionId"] = "statusline-bench"
    lines.append(json.dumps(j, separators=(",", ":")))
    if n == 60: break
open(out, "w").write("\n".join(lines) + "\n")
PY
PAYLOAD=$(python3 -c 'import json,sys; print(json.dumps({"session_id":"statusline-bench","transcript_path":sys.argv[1],"cwd":"/bench","model":{"id":"claude-opus-4-6","display_name":"Opus"},"workspace":{"current_dir":"/bench","project_dir":"/bench"},"version":"2.1.197","cost":{"total_cost_usd":0}}))' "$TODAY_DIR/today.jsonl")
SL_ROOT=$BENCH_DIR/statusline-root
rm -rf "$SL_ROOT"; mkdir -p "$SL_ROOT"
python3 - "$HOOP" "$CCU" "$CCU_HOME" "$SL_ROOT" "$PAYLOAD" <<'PY'
import os, statistics, subprocess, sys, time
hoop, ccu, ccu_home, root, payload = sys.argv[1:6]
def run(cmd, env):
    t = time.perf_counter()
    p = subprocess.run(cmd, input=payload.encode(), capture_output=True, env=env, timeout=120)
    return (time.perf_counter() - t) * 1000, p.stdout.decode().strip(), p.stderr.decode().strip()
base = dict(os.environ)
h_env = dict(base, HOOP_ROOT=root)
c_env = dict(base, HOME=ccu_home)
cold_ms, line, err = run([hoop, "statusline"], h_env)
hoop_t = [run([hoop, "statusline"], h_env)[0] for _ in range(20)]
ccu_cold, cline, cerr = run([ccu, "statusline", "--offline"], c_env)
ccu_t = [run([ccu, "statusline", "--offline"], c_env)[0] for _ in range(5)]
print(f"   hoop statusline:    {line}")
print(f"     first run (state built) {cold_ms:.0f} ms; warm median {statistics.median(hoop_t):.1f} ms, max {max(hoop_t):.1f} ms (20 runs){'; stderr: ' + err if err else ''}")
print(f"   ccusage statusline: {cline}")
print(f"     first run {ccu_cold:.0f} ms; median {statistics.median(ccu_t):.0f} ms, max {max(ccu_t):.0f} ms (5 runs){'; stderr: ' + cerr[:200] if cerr else ''}")
PY
rm -rf "$TODAY_DIR"

echo "== the card snapshot hook's own cost (no sentinel work: decision + one loopback round trip)"
python3 - "$HOOP" "$BENCH_DIR" <<'PY'
import http.server, json, os, statistics, subprocess, sys, threading, time
hoop, bench = sys.argv[1], sys.argv[2]
root = os.path.join(bench, "hook-root")
work = os.path.join(root, "bolt", "work")
os.makedirs(work, exist_ok=True)
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"reported":true}'
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
open(os.path.join(root, "bolt", "usage-snapshot.endpoint"), "w").write(f"http://127.0.0.1:{srv.server_address[1]}\n")
def call(tool):
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": tool, "cwd": work,
                       "tool_input": {"task_id": 1}, "tool_use_id": "toolu_1", "transcript_path": "/none"}).encode()
def t(payload):
    s = time.perf_counter(); subprocess.run([hoop, "card-snapshot"], input=payload, env=dict(os.environ, HOOP_ROOT=root), check=True, capture_output=True); return (time.perf_counter() - s) * 1000
for name, tool in [("another tool (no request)", "mcp__hoop__chat_send_text"), ("a card call (one loopback request)", "mcp__hoop__work_task_finish")]:
    ms = [t(call(tool)) for _ in range(30)]
    print(f"   {name:<38} median {statistics.median(ms):.1f} ms, max {max(ms):.1f} ms (30 runs)")
srv.shutdown()
PY

echo "== the account snapshot per turn: a year of transcripts, 1 / 100 / 1,000 finished workers"
"$TURN_BENCH" "$BENCH_DIR"

echo "== time and memory"
awk '{printf "   %-12s median %7.3f s   peak RSS %7.1f MB\n", $1, $2, $3/1024}' "$BENCH_DIR/results.txt"
awk 'NR==FNR {t[$1]=$2; next} END {printf "   cold ratio ccusage/hoop: %.1fx   warm hoop rerun: %.0f ms\n", t["ccusage"]/t["hoop_cold"], t["hoop_warm"]*1000}' \
  "$BENCH_DIR/results.txt" "$BENCH_DIR/results.txt"
if [ -f "$BENCH_DIR/hoop_warm.hyperfine.json" ]; then
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; m, s, lo = (r[k] * 1000 for k in ("mean", "stddev", "min")); print(f"   warm rerun (hyperfine, 30 runs): mean {m:.1f} ms +- {s:.1f} ms, min {lo:.1f} ms")' \
    "$BENCH_DIR/hoop_warm.hyperfine.json"
fi
