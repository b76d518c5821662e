//! The act_guard verdict function alone (no process, no I/O): a typical
//! allowed command, a blocked one, and a nested one that is parsed twice.

use criterion::{Criterion, criterion_group, criterion_main};
use hoop_guards::act::{self, ActConfig};
use std::hint::black_box;

/// The same commands `scripts/bench-guards.sh` sends through whole processes.
const COMMANDS: &[(&str, &str)] = &[
    ("allow_simple", "git status"),
    ("allow_pipeline", "grep -rn 'rm -rf' src | sort | head -20"),
    ("block_rm", "rm -rf build"),
    ("block_force_push", "git push --force origin main"),
    (
        "nested_bash_c",
        "cd /srv/app && bash -c 'echo start; sudo env FOO=1 rm -rf /var/lib/app' && echo done",
    ),
    (
        "heredoc_data",
        "cat <<'EOF' > notes.md\nrm -rf /\ngit push --force origin main\nEOF",
    ),
];

fn verdicts(c: &mut Criterion) {
    let cfg = ActConfig::default();
    let mut g = c.benchmark_group("act_verdict");
    for (name, cmd) in COMMANDS {
        g.bench_function(*name, |b| b.iter(|| act::check(black_box(cmd), &cfg)));
    }
    g.finish();
}

criterion_group!(benches, verdicts);
criterion_main!(benches);
