//! The hot path of the meter: classifying one transcript line, and scanning
//! a file of real-shaped lines.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hoop_core::transcript::parse_line;
use hoop_meter::scan::{Groups, Strings, scan_file};

fn real_lines() -> Vec<String> {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transcript-sample-tool-use.jsonl");
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn bench(c: &mut Criterion) {
    let lines = real_lines();
    let assistant = lines
        .iter()
        .find(|l| l.contains("\"usage\"") && l.contains("\"assistant\""))
        .unwrap()
        .clone();
    let user = lines
        .iter()
        .find(|l| l.contains("\"type\":\"user\"") && !l.contains("\"usage\""))
        .unwrap()
        .clone();
    let mut g = c.benchmark_group("parse_line");
    g.throughput(Throughput::Bytes(assistant.len() as u64));
    g.bench_function("assistant_with_usage", |b| {
        b.iter(|| black_box(parse_line(black_box(assistant.as_bytes()))))
    });
    g.throughput(Throughput::Bytes(user.len() as u64));
    g.bench_function("user_prefiltered", |b| {
        b.iter(|| black_box(parse_line(black_box(user.as_bytes()))))
    });
    g.finish();

    // A file of the real lines repeated (with distinct ids) to ~8 MB.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut body = String::new();
    let mut i = 0;
    while body.len() < 8 << 20 {
        for l in &lines {
            body.push_str(&l.replace("msg_000", &format!("msg_{i}_")));
            body.push('\n');
        }
        i += 1;
    }
    std::fs::write(&path, &body).unwrap();
    let mut g = c.benchmark_group("scan_file");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(20);
    g.bench_function("8MB_real_shaped", |b| {
        b.iter(|| {
            let mut s = Strings::default();
            let mut gr = Groups::default();
            black_box(scan_file(&path, "t", 0, &mut s, &mut gr).unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
