//! The usage meter behind `hoop usage`: daily, session, project, home and
//! 5-hour block reports over Claude Code's own transcripts, read
//! incrementally and streamed so that a multi-gigabyte transcript never sits
//! in memory.
//!
//! Pipeline: [`discover`] the transcript files → [`collect`] (per file, read
//! only the bytes the incremental state has not seen, in parallel; every
//! line goes through `hoop_core::transcript`) → global dedup, one entry per
//! API response keeping its largest copy → [`report`] rows, priced from the
//! table in [`prices`]. The sentinel's usage snapshot of an account is
//! [`ledger`]: running totals over the same scan, attributed by the one
//! rule in [`attribution`], that never go down. Where Claude Code keeps its
//! files is [`claude_dirs`].
//!
//! **One API response counts once.** A message id names one API response,
//! so every record carrying it is a copy of that response, whatever its
//! request id, sidechain flag or file says: a side question replays earlier
//! assistant records under a new request id, a resumed session copies its
//! history into the new transcript, and streaming writes one response as
//! several records whose usage grows. The dedup key
//! ([`scan::dedup_key`]) is therefore the message id; a record without one
//! falls back to its request id, and a record with neither is its own entry.
//! Among copies the largest usage wins (then the earliest timestamp, then
//! path and offset), wherever it sits.
//!
//! How this relates to ccusage (20.0.24, observed by running it on
//! hand-made transcripts): ccusage keys on message id + request id, keeps
//! the largest copy of a key, and drops a sidechain record whose message id
//! it has seen anywhere (in whichever order the files are read). The two
//! rules agree on plain transcripts, streaming copies and sidechain
//! replays. They differ where one message id carries two request ids
//! outside a sidechain (a resumed session's copied history under new
//! request ids, an unflagged replay): ccusage counts each pair, this meter
//! counts the response once. Records without a request id are deduplicated
//! by ccusage only within one file (two files with the same message id and
//! no request id count twice there, once here), and records without a
//! message id are never deduplicated by ccusage (its key needs the message
//! id), while here they fall back to the request id.
//!
//! Incremental == cold: the state keeps per file the winning record of each
//! group, so a later, larger copy of a group replaces the earlier one and a
//! rewritten or shrunk file is read again from its start; the final dedup
//! runs over all files every time. A cache written under another dedup rule
//! has another format version and is rebuilt (see [`state`]).

pub mod attribution;
pub mod claude_dirs;
mod codec;
pub mod ledger;
pub mod prices;
pub mod report;
pub mod scan;
pub mod state;
pub mod timefmt;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoop_core::transcript::Usage;
use thiserror::Error;

use scan::{Groups, KeyMap, Rec, Skipped, Strings, better, fingerprint_at, scan_file};
use state::{FileState, Loaded, Merged, State};

pub use claude_dirs::{CLAUDE_CONFIG_DIR_ENV, ClaudeDirs, claude_dirs};

/// Transcripts live under `<config dir>/projects/`.
pub const PROJECTS_DIR: &str = "projects";
/// The state file's name under the hoop root.
pub const STATE_FILE: &str = "usage-cache.bin";
/// Upper bound on scanning threads (the work is I/O and parse bound; more
/// threads than cores only adds memory).
pub const MAX_THREADS: usize = 8;

#[derive(Debug, Error)]
pub enum MeterError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no Claude config directory: set {CLAUDE_CONFIG_DIR_ENV} or HOME")]
    NoConfigDir,
    #[error(
        "{path} is damaged; move it aside to start the account's usage ledger over \
         (totals are then read again from the transcripts still on disk)"
    )]
    Corrupt { path: PathBuf },
    #[error("{path} is held by another process (waited {waited:?})")]
    Busy {
        path: PathBuf,
        waited: std::time::Duration,
    },
}

/// One transcript file found on disk.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: PathBuf,
    pub path_str: String,
    /// The directory right under `projects/` (Claude Code's escaped cwd).
    pub project: String,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
}

impl Found {
    /// Stat one file (`None` when it is not a regular file).
    pub fn stat(path: &Path, project: &str) -> Option<Found> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        m.is_file().then(|| Found {
            path: path.to_path_buf(),
            path_str: path.to_string_lossy().into_owned(),
            project: project.to_string(),
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        })
    }
}

/// Which project folders (`<config dir>/projects/<folder>`) to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectFilter {
    /// Every folder.
    All,
    /// Folders named by one of these escaped working directories (see
    /// [`claude_dirs::project_slug`]), or one of them followed by `-` (a
    /// directory below it; a neighbour that merely shares the prefix is
    /// left to the caller's attribution).
    Slugs(Vec<String>),
}

impl ProjectFilter {
    fn admits(&self, folder: &str) -> bool {
        match self {
            ProjectFilter::All => true,
            ProjectFilter::Slugs(v) => v.iter().any(|s| {
                folder
                    .strip_prefix(s.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
            }),
        }
    }
}

/// A Claude config dir and the project folders of it to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub dir: PathBuf,
    pub projects: ProjectFilter,
}

impl Source {
    /// Whether `path` is a transcript this source reads (under an admitted
    /// project folder of its `projects/`).
    pub fn covers(&self, path: &Path) -> bool {
        let Ok(rest) = path.strip_prefix(self.dir.join(PROJECTS_DIR)) else {
            return false;
        };
        let mut parts = rest.components();
        match (parts.next(), parts.next()) {
            (Some(std::path::Component::Normal(folder)), Some(_)) => {
                self.projects.admits(&folder.to_string_lossy())
            }
            (Some(std::path::Component::Normal(_)), None) => self.projects == ProjectFilter::All,
            _ => false,
        }
    }
}

/// Every `*.jsonl` under `<dir>/projects/**` of every config dir
/// (subagent transcripts in nested directories included). A file reachable
/// twice (overlapping dirs, hard links) is listed once. Symlinked
/// directories are not followed (no loops).
pub fn discover(dirs: &[PathBuf]) -> Vec<Found> {
    let sources: Vec<Source> = dirs
        .iter()
        .map(|d| Source {
            dir: d.clone(),
            projects: ProjectFilter::All,
        })
        .collect();
    discover_in(&sources)
}

/// [`discover`] over the admitted project folders of each source.
pub fn discover_in(sources: &[Source]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for src in sources {
        let root = src.dir.join(PROJECTS_DIR);
        let mut stack = vec![(root, None::<String>)];
        while let Some((dir, project)) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if ft.is_dir() {
                    if project.is_none() && !src.projects.admits(&name) {
                        continue;
                    }
                    let proj = project.clone().or_else(|| Some(name.clone()));
                    stack.push((p, proj));
                } else if name.ends_with(".jsonl")
                    && (project.is_some() || src.projects == ProjectFilter::All)
                {
                    let Some(f) = Found::stat(&p, project.as_deref().unwrap_or_default()) else {
                        continue;
                    };
                    if !seen.insert((f.dev, f.ino)) {
                        continue;
                    }
                    out.push(f);
                }
            }
        }
    }
    out.sort_by(|a, b| a.path_str.cmp(&b.path_str));
    out
}

/// How to collect.
#[derive(Debug, Clone, Default)]
pub struct CollectOptions {
    /// The incremental state file; `None` = a cold run that neither reads
    /// nor writes state.
    pub state_path: Option<PathBuf>,
    /// Cold runs only: a file last modified before this Unix millisecond
    /// cannot hold a line dated after it and is not read at all.
    pub skip_files_before_ms: Option<i64>,
    /// Scanning threads (0 = number of CPUs, capped at [`MAX_THREADS`]).
    pub threads: usize,
    /// Cold and incremental runs: only files last modified at or after this
    /// Unix millisecond take part (the status line keeps a small state of
    /// the last two days this way; older files drop out of it).
    pub only_files_since_ms: Option<i64>,
}

/// One deduplicated API response, ready to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub usage: Usage,
    pub ts_ms: i64,
    /// Indexes into [`Collected::strings`].
    pub model: u32,
    pub session: u32,
    pub project: u32,
    pub cwd: u32,
}

/// Everything the reports are built from.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    pub entries: Vec<Entry>,
    pub strings: Vec<String>,
    pub skipped: Skipped,
    /// Transcript files seen / actually read this run / bytes read.
    pub files: usize,
    pub files_read: usize,
    pub bytes_read: u64,
    /// Non-fatal problems (unreadable files, a rebuilt cache).
    pub warnings: Vec<String>,
}

enum Job {
    Keep(FileState),
    Resume(FileState),
    Full,
}

struct Done {
    state: FileState,
    bytes_read: u64,
    read: bool,
    warning: Option<String>,
}

fn full_scan(f: &Found) -> std::io::Result<(FileState, u64)> {
    let mut strings = Strings::default();
    let mut groups = Groups::default();
    let out = scan_file(&f.path, &f.path_str, 0, &mut strings, &mut groups)?;
    finish(f, strings, groups, Skipped::default(), out)
}

fn finish(
    f: &Found,
    strings: Strings,
    groups: Groups,
    before: Skipped,
    out: scan::ScanOut,
) -> std::io::Result<(FileState, u64)> {
    let mut skipped = before;
    skipped.add(&out.skipped);
    let fp = fingerprint_at(&f.path, out.consumed)?;
    Ok((
        FileState {
            path: f.path_str.clone(),
            dev: f.dev,
            ino: f.ino,
            size: f.size,
            mtime_ns: f.mtime_ns,
            offset: out.consumed,
            fingerprint: fp,
            skipped,
            tail_incomplete: out.tail_incomplete,
            strings: strings.list,
            recs: groups.recs,
            tail: out.tail,
        },
        out.bytes_read,
    ))
}

fn resume(f: &Found, old: FileState) -> std::io::Result<(FileState, u64)> {
    if fingerprint_at(&f.path, old.offset)? != old.fingerprint {
        return full_scan(f);
    }
    let mut strings = Strings::from_list(old.strings);
    let mut groups = Groups::from_recs(old.recs);
    let out = scan_file(&f.path, &f.path_str, old.offset, &mut strings, &mut groups)?;
    finish(f, strings, groups, old.skipped, out)
}

fn run_job(f: &Found, job: Job) -> Done {
    let res = match job {
        Job::Keep(mut s) => {
            s.mtime_ns = f.mtime_ns;
            return Done {
                state: s,
                bytes_read: 0,
                read: false,
                warning: None,
            };
        }
        Job::Resume(old) => resume(f, old),
        Job::Full => full_scan(f),
    };
    match res {
        Ok((state, bytes_read)) => Done {
            state,
            bytes_read,
            read: true,
            warning: None,
        },
        // A file that vanished or cannot be read is reported and left out.
        Err(e) => Done {
            state: FileState {
                path: f.path_str.clone(),
                ..FileState::default()
            },
            bytes_read: 0,
            read: false,
            warning: Some(format!("{}: {e}", f.path_str)),
        },
    }
}

fn plan(found: &[Found], old: State) -> Vec<Job> {
    let mut by_path: HashMap<String, FileState> =
        old.files.into_iter().map(|f| (f.path.clone(), f)).collect();
    found
        .iter()
        .map(|f| match by_path.remove(&f.path_str) {
            Some(o) if o.dev == f.dev && o.ino == f.ino && f.size >= o.offset => {
                if f.size == o.size && f.mtime_ns == o.mtime_ns {
                    Job::Keep(o)
                } else {
                    Job::Resume(o)
                }
            }
            _ => Job::Full,
        })
        .collect()
}

fn threads(n: usize) -> usize {
    let n = if n == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        n
    };
    n.clamp(1, MAX_THREADS)
}

/// Read every transcript (incrementally when a state path is given) and
/// return the deduplicated entries.
pub fn collect(dirs: &[PathBuf], opts: &CollectOptions) -> Result<Collected, MeterError> {
    let mut found = discover(dirs);
    if let Some(t) = opts.only_files_since_ms {
        found.retain(|f| f.mtime_ns / 1_000_000 >= t);
    }
    let mut warnings = Vec::new();
    let loaded = match &opts.state_path {
        Some(p) => {
            let (s, w) = State::load(p);
            warnings.extend(w);
            s
        }
        None => {
            if let Some(t) = opts.skip_files_before_ms {
                found.retain(|f| f.mtime_ns / 1_000_000 >= t);
            }
            Loaded::default()
        }
    };
    // Fast path: no file changed, none came or went → the merged entries of
    // the last run are the answer; nothing is read but the state's headers.
    if opts.state_path.is_some()
        && let Some(m) = &loaded.state.merged
        && unchanged(&found, &loaded.state.files)
    {
        let mut skipped = Skipped::default();
        for f in &loaded.state.files {
            skipped.add(&f.skipped);
            skipped.incomplete_tail += f.tail_incomplete;
        }
        return Ok(Collected {
            entries: m.entries.clone(),
            strings: m.strings.clone(),
            skipped,
            files: found.len(),
            warnings,
            ..Collected::default()
        });
    }
    let old = match loaded.materialize() {
        Some(s) => s,
        None => {
            if let Some(p) = &opts.state_path {
                warnings.push(State::unreadable(p));
            }
            State::default()
        }
    };
    let jobs = plan(&found, old);
    let done = run_parallel(&found, jobs, threads(opts.threads));
    let mut c = Collected {
        files: found.len(),
        ..Collected::default()
    };
    let mut states = Vec::with_capacity(done.len());
    for d in done {
        c.bytes_read += d.bytes_read;
        c.files_read += d.read as usize;
        warnings.extend(d.warning);
        states.push(d.state);
    }
    c.warnings = warnings;
    merge(&found, &states, &mut c);
    if let Some(p) = &opts.state_path {
        let st = State {
            files: states,
            merged: Some(Merged {
                strings: c.strings.clone(),
                entries: c.entries.clone(),
            }),
        };
        // An unwritable cache costs the next run its speed, not this
        // run its answer.
        if let Err(e) = st.save(p) {
            c.warnings
                .push(format!("{e}; the next run will read everything again"));
        }
    }
    Ok(c)
}

/// True when every found file is in the state with the same identity, size
/// and mtime, and the state holds no other file.
fn unchanged(found: &[Found], files: &[FileState]) -> bool {
    found.len() == files.len()
        && found.iter().zip(files).all(|(f, s)| {
            f.path_str == s.path
                && f.dev == s.dev
                && f.ino == s.ino
                && f.size == s.size
                && f.mtime_ns == s.mtime_ns
        })
}

fn run_parallel(found: &[Found], jobs: Vec<Job>, nthreads: usize) -> Vec<Done> {
    // Biggest reads first so one large file does not finish last alone.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    let cost = |j: &Job, f: &Found| match j {
        Job::Keep(_) => 0,
        Job::Resume(o) => f.size.saturating_sub(o.offset),
        Job::Full => f.size,
    };
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&jobs[i], &found[i])));
    let slots: Vec<Mutex<Option<Job>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let results: Vec<Mutex<Option<Done>>> = (0..slots.len()).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..nthreads.min(slots.len().max(1)) {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = order.get(k) else { break };
                    let job = slots[i].lock().expect("job slot").take().expect("job once");
                    let d = run_job(&found[i], job);
                    *results[i].lock().expect("result slot") = Some(d);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().expect("result slot").expect("every job ran"))
        .collect()
}

/// Global dedup over all files (sorted by path, so ties resolve the same
/// way every run) and mapping to a shared string table.
fn merge(found: &[Found], states: &[FileState], c: &mut Collected) {
    let mut winners: KeyMap<(usize, Rec)> = KeyMap::default();
    for (fi, st) in states.iter().enumerate() {
        c.skipped.add(&st.skipped);
        c.skipped.incomplete_tail += st.tail_incomplete;
        for r in st.recs.iter().chain(st.tail.iter()) {
            match winners.get_mut(&r.key) {
                Some((cf, cur)) => {
                    let cur_path = states[*cf].path.as_str();
                    if better(r, (&st.path, r.line_off), cur, (cur_path, cur.line_off)) {
                        *cf = fi;
                        *cur = *r;
                    }
                }
                None => {
                    winners.insert(r.key, (fi, *r));
                }
            }
        }
    }
    let mut global = Strings::default();
    let mut maps: Vec<Option<Vec<u32>>> = vec![None; states.len()];
    let mut project_ids: Vec<Option<u32>> = vec![None; states.len()];
    let mut entries = Vec::with_capacity(winners.len());
    for (fi, r) in winners.into_values() {
        let st = &states[fi];
        let map =
            maps[fi].get_or_insert_with(|| st.strings.iter().map(|s| global.intern(s)).collect());
        let (model, session, cwd) = (
            map[r.model as usize],
            map[r.session as usize],
            map[r.cwd as usize],
        );
        let project = *project_ids[fi].get_or_insert_with(|| global.intern(&found[fi].project));
        entries.push(Entry {
            usage: r.usage,
            ts_ms: r.ts_ms,
            model,
            session,
            project,
            cwd,
        });
    }
    entries.sort_unstable_by_key(|e| e.ts_ms);
    c.entries = entries;
    c.strings = global.list;
}

/// Sum entries field by field (saturating: a total never wraps).
pub fn sum(entries: &[Entry]) -> Usage {
    entries.iter().fold(Usage::default(), |mut t, e| {
        let u = &e.usage;
        t.input = t.input.saturating_add(u.input);
        t.cache_write_5m = t.cache_write_5m.saturating_add(u.cache_write_5m);
        t.cache_write_1h = t.cache_write_1h.saturating_add(u.cache_write_1h);
        t.cache_write_unsplit = t.cache_write_unsplit.saturating_add(u.cache_write_unsplit);
        t.cache_read = t.cache_read.saturating_add(u.cache_read);
        t.output = t.output.saturating_add(u.output);
        t
    })
}
