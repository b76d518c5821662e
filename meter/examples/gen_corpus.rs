//! Generates a synthetic Claude Code config dir for benchmarks: thousands of
//! transcripts with a realistic size spread (log-normal around ~100 KB, a few
//! of tens of MB, one line of several MB), shaped like the real CLI's lines:
//! compact JSON, one assistant line per content block with the usage
//! repeated and growing (the last copy is final), subagent transcripts under
//! `<session>/subagents/`, sidechain replays into other transcripts, side
//! questions that replay the main chain's last responses as sidechain
//! records under a new request id, a few truncated lines. It also writes
//! `expected.json`: the true totals (largest copy per message id: one API
//! response counts once) computed while generating, independently of the
//! meter's reader.
//!
//! `cargo run --release -p hoop-meter --example gen_corpus -- OUT_DIR [TOTAL_MB] [FILES] [SEED]`

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit().max(1e-12), self.unit());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    fn uuid(&mut self) -> String {
        let a = self.next();
        let b = self.next();
        format!(
            "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }
}

#[derive(Default, Clone, Copy)]
struct U {
    input: u64,
    w5: u64,
    w1: u64,
    read: u64,
    output: u64,
}

const MODELS: &[(&str, u64)] = &[
    ("claude-opus-4-6", 35),
    ("claude-opus-4-8", 10),
    ("claude-sonnet-4-5-20250929", 20),
    ("claude-sonnet-4-6", 15),
    ("claude-haiku-4-5-20251001", 20),
];

fn pick_model(r: &mut Rng) -> &'static str {
    let mut x = r.below(100);
    for (m, w) in MODELS {
        if x < *w {
            return m;
        }
        x -= w;
    }
    MODELS[0].0
}

fn filler(r: &mut Rng, n: usize) -> String {
    const WORDS: &[&str] = &[
        "the", "function", "returns", "error", "file", "test", "build", "cargo", "value", "line",
        "struct", "impl", "self", "match", "Some", "None", "path", "config", "usage", "token",
    ];
    let mut s = String::with_capacity(n + 16);
    while s.len() < n {
        s.push_str(WORDS[r.below(WORDS.len() as u64) as usize]);
        s.push(if r.below(12) == 0 { '\n' } else { ' ' });
    }
    s.truncate(n);
    // Escape for JSON: only newlines and quotes can appear.
    s.replace('\n', "\\n")
}

fn ts(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs - days * 86_400;
    let (y, m, d) = civil(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ms.rem_euclid(1000)
    )
}

fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

struct Truth {
    /// Largest usage per message id.
    groups: HashMap<String, U>,
    /// Assistant records written again as side-question replays.
    side_replayed: u64,
    lines: u64,
    malformed: u64,
    long_ctx_sonnet45: u64,
}

impl Truth {
    fn offer(&mut self, id: &str, u: U) {
        let e = self.groups.entry(id.to_string()).or_default();
        let tot = |u: &U| u.input + u.w5 + u.w1 + u.read + u.output;
        if tot(&u) > tot(e) {
            *e = u;
        }
    }
}

struct Session<'a> {
    id: String,
    cwd: String,
    model: &'static str,
    t_ms: i64,
    sidechain: bool,
    agent: Option<String>,
    replays: &'a mut Vec<String>,
}

#[allow(clippy::too_many_arguments)]
fn assistant_line(
    s: &Session,
    id: &str,
    req: &str,
    uuid: &str,
    parent: &str,
    block: &str,
    u: &U,
    t: i64,
) -> String {
    let agent = s
        .agent
        .as_ref()
        .map(|a| format!(r#","agentId":"{a}""#))
        .unwrap_or_default();
    format!(
        r#"{{"parentUuid":"{parent}","isSidechain":{sc},"userType":"external","cwd":"{cwd}","sessionId":"{sid}","version":"2.1.197","gitBranch":"main"{agent},"message":{{"id":"{id}","type":"message","role":"assistant","model":"{model}","content":[{block}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":{i},"cache_creation_input_tokens":{cw},"cache_read_input_tokens":{cr},"output_tokens":{o},"server_tool_use":{{"web_search_requests":0,"web_fetch_requests":0}},"service_tier":"standard","cache_creation":{{"ephemeral_5m_input_tokens":{w5},"ephemeral_1h_input_tokens":{w1}}}}}}},"requestId":"{req}","type":"assistant","uuid":"{uuid}","timestamp":"{ts}"}}"#,
        sc = s.sidechain,
        cwd = s.cwd,
        sid = s.id,
        model = s.model,
        i = u.input,
        cw = u.w5 + u.w1,
        cr = u.read,
        o = u.output,
        w5 = u.w5,
        w1 = u.w1,
        ts = ts(t),
    )
}

/// Writes one transcript of about `target` bytes; returns bytes written.
fn write_transcript(
    path: &Path,
    target: u64,
    r: &mut Rng,
    s: &mut Session,
    truth: &mut Truth,
    giant_line: bool,
) -> u64 {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path).unwrap());
    let mut written = 0u64;
    let mut parent = r.uuid();
    let mut context = 8_000 + r.below(20_000);
    let mut first = true;
    // The last few responses' final lines (what a side question replays).
    let mut recent: Vec<String> = Vec::new();
    let emit = |w: &mut BufWriter<File>, line: &str, written: &mut u64| {
        w.write_all(line.as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
        *written += line.len() as u64 + 1;
    };
    while written < target {
        // The user turn (sometimes a large tool result).
        let big = if giant_line && first {
            6 << 20
        } else if r.below(5) == 0 {
            2_000 + r.below(40_000) as usize
        } else {
            50 + r.below(400) as usize
        };
        first = false;
        let uuid = r.uuid();
        let text = filler(r, big);
        let line = format!(
            r#"{{"parentUuid":"{parent}","isSidechain":{},"userType":"external","cwd":"{}","sessionId":"{}","version":"2.1.197","gitBranch":"main","type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_{}","type":"tool_result","content":"{text}","is_error":false}}]}},"uuid":"{uuid}","timestamp":"{}"}}"#,
            s.sidechain,
            s.cwd,
            s.id,
            r.below(1 << 40),
            ts(s.t_ms)
        );
        emit(&mut w, &line, &mut written);
        truth.lines += 1;
        parent = uuid;
        s.t_ms += 1_000 + r.below(60_000) as i64;
        // The response: N content blocks = N lines, usage growing.
        let id = format!("msg_01{}", &r.uuid().replace('-', "")[..22]);
        let req = format!("req_011C{}", &r.uuid().replace('-', "")[..20]);
        let nblocks = 1 + r.below(4);
        context += big as u64 / 4 + r.below(3_000);
        if context > 330_000 || r.below(40) == 0 {
            context = 8_000 + r.below(20_000); // compaction / new topic
        }
        let one_hour = r.below(3) == 0;
        let write = r.below(6_000);
        let mut u = U {
            input: 1 + r.below(40),
            w5: if one_hour { 0 } else { write },
            w1: if one_hour { write } else { 0 },
            read: context,
            output: 1 + r.below(20),
        };
        if s.model.starts_with("claude-sonnet-4-5") && u.input + u.w5 + u.w1 + u.read > 200_000 {
            truth.long_ctx_sonnet45 += 1;
        }
        let mut lines_of_response = Vec::new();
        for b in 0..nblocks {
            let uuid = r.uuid();
            let block = if b == 0 && r.below(2) == 0 {
                format!(
                    r#"{{"type":"thinking","thinking":"{}","signature":"{}"}}"#,
                    {
                        let n = 200 + r.below(3_000) as usize;
                        filler(r, n)
                    },
                    "Eo8B".repeat(20)
                )
            } else if b == nblocks - 1 && r.below(2) == 0 {
                format!(
                    r#"{{"type":"tool_use","id":"toolu_{}","name":"Bash","input":{{"command":"cargo test -p x","description":"{}"}}}}"#,
                    r.below(1 << 40),
                    filler(r, 40)
                )
            } else {
                let n = 100 + r.below(2_500) as usize;
                format!(r#"{{"type":"text","text":"{}"}}"#, filler(r, n))
            };
            u.output += r.below(400);
            let line = assistant_line(s, &id, &req, &uuid, &parent, &block, &u, s.t_ms);
            emit(&mut w, &line, &mut written);
            truth.lines += 1;
            truth.offer(&id, u);
            parent = uuid;
            s.t_ms += 50 + r.below(900) as i64;
            lines_of_response.push(line);
        }
        // Sometimes a sidechain response is replayed into another transcript.
        if s.sidechain && r.below(10) == 0 {
            s.replays.push(lines_of_response.last().unwrap().clone());
        }
        recent.push(lines_of_response.last().unwrap().clone());
        if recent.len() > 3 {
            recent.remove(0);
        }
        // Sometimes a side question: the main chain's last responses are
        // replayed as sidechain records under the side question's own
        // request id (same message ids, same usage).
        if !s.sidechain && r.below(12) == 0 {
            let side_req = format!("req_011C{}", &r.uuid().replace('-', "")[..20]);
            for l in &recent {
                let old_req = l
                    .split(r#""requestId":""#)
                    .nth(1)
                    .and_then(|t| t.split('"').next())
                    .unwrap_or_default();
                let copy = l
                    .replace(r#""isSidechain":false"#, r#""isSidechain":true"#)
                    .replace(
                        &format!(r#""requestId":"{old_req}""#),
                        &format!(r#""requestId":"{side_req}""#),
                    );
                emit(&mut w, &copy, &mut written);
                truth.lines += 1;
                truth.side_replayed += 1;
            }
        }
        // A line cut mid-write now and then (it carries no usage bytes).
        if r.below(400) == 0 {
            let cut = format!(
                r#"{{"parentUuid":"{parent}","isSidechain":false,"type":"user","message":{{"role":"user","content":"cut"#
            );
            emit(&mut w, &cut, &mut written);
            truth.malformed += 1;
        }
        s.t_ms += r.below(120_000) as i64;
    }
    w.flush().unwrap();
    written
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let out = PathBuf::from(
        args.get(1)
            .expect("usage: gen_corpus OUT_DIR [TOTAL_MB] [FILES] [SEED]"),
    );
    let total_mb: u64 = args.get(2).map_or(1100, |s| s.parse().expect("TOTAL_MB"));
    let nfiles: usize = args.get(3).map_or(4000, |s| s.parse().expect("FILES"));
    let seed: u64 = args.get(4).map_or(0x5eed, |s| s.parse().expect("SEED"));
    let mut r = Rng(seed | 1);
    // Sizes: a few files of tens of MB, the rest log-normal around 100 KB,
    // scaled so the total is about TOTAL_MB.
    let big = [60u64, 45, 30, 20, 12].map(|m| m << 20);
    let rest_n = nfiles.saturating_sub(big.len());
    let mut sizes: Vec<f64> = (0..rest_n)
        .map(|_| 100_000.0 * (1.1 * r.normal()).exp())
        .map(|s: f64| s.clamp(2_000.0, 8_000_000.0))
        .collect();
    let want_rest = (total_mb << 20).saturating_sub(big.iter().sum()) as f64;
    let scale = want_rest / sizes.iter().sum::<f64>();
    for s in &mut sizes {
        *s *= scale;
    }
    let mut sizes: Vec<u64> = sizes.into_iter().map(|s| s as u64).collect();
    sizes.extend(big);
    let projects: Vec<String> = (0..40)
        .map(|i| {
            if i < 4 {
                format!("/root/.hoop/agent{i}/work")
            } else {
                format!("/home/dev/src/project-{i}")
            }
        })
        .collect();
    let mut truth = Truth {
        groups: HashMap::new(),
        side_replayed: 0,
        lines: 0,
        malformed: 0,
        long_ctx_sonnet45: 0,
    };
    let mut replays: Vec<String> = Vec::new();
    let mut total = 0u64;
    let mut files = 0usize;
    let start_ms: i64 = 1_791_000_000_000; // late Oct 2026
    let mut parent_sessions: Vec<(PathBuf, String, String)> = Vec::new();
    let ngiant = sizes.len() - 1;
    for (k, &size) in sizes.iter().enumerate() {
        let is_sub = k % 8 == 7 && !parent_sessions.is_empty();
        let (path, id, cwd, agent) = if is_sub {
            let (dir, sid, cwd) =
                parent_sessions[r.below(parent_sessions.len() as u64) as usize].clone();
            let agent = format!("a{}", &r.uuid()[..8]);
            (
                dir.join(&sid)
                    .join("subagents")
                    .join(format!("agent-{agent}.jsonl")),
                sid,
                cwd,
                Some(agent),
            )
        } else {
            let cwd = projects[r.below(projects.len() as u64) as usize].clone();
            let dir = out
                .join("projects")
                .join(cwd.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
            let sid = r.uuid();
            parent_sessions.push((dir.clone(), sid.clone(), cwd.clone()));
            (dir.join(format!("{sid}.jsonl")), sid, cwd, None)
        };
        let mut s = Session {
            id,
            cwd,
            model: pick_model(&mut r),
            t_ms: start_ms + r.below(35 * 86_400_000) as i64,
            sidechain: is_sub,
            agent,
            replays: &mut replays,
        };
        total += write_transcript(&path, size, &mut r, &mut s, &mut truth, k == ngiant);
        files += 1;
    }
    // Sidechain replays: appended to some main transcripts (same id + request).
    let mut replayed = 0;
    for (i, line) in replays.iter().enumerate() {
        let (dir, sid, _) = &parent_sessions[i % parent_sessions.len()];
        let p = dir.join(format!("{sid}.jsonl"));
        let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(line.as_bytes()).unwrap();
        f.write_all(b"\n").unwrap();
        total += line.len() as u64 + 1;
        replayed += 1;
    }
    let mut t = U::default();
    for u in truth.groups.values() {
        t.input += u.input;
        t.w5 += u.w5;
        t.w1 += u.w1;
        t.read += u.read;
        t.output += u.output;
    }
    let expected = format!(
        r#"{{"files":{files},"bytes":{total},"lines":{},"responses":{},"replayed_lines":{replayed},"side_question_replayed_lines":{},"malformed_lines":{},"sonnet45_long_context_responses":{},"input_tokens":{},"cache_creation_input_tokens":{},"cache_creation_5m_input_tokens":{},"cache_creation_1h_input_tokens":{},"cache_read_input_tokens":{},"output_tokens":{}}}"#,
        truth.lines,
        truth.groups.len(),
        truth.side_replayed,
        truth.malformed,
        truth.long_ctx_sonnet45,
        t.input,
        t.w5 + t.w1,
        t.w5,
        t.w1,
        t.read,
        t.output
    );
    fs::write(out.join("expected.json"), format!("{expected}\n")).unwrap();
    println!("{expected}");
}
