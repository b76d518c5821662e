//! The system preamble of a round (SPEC §2 step 5): prompt parts — `core`
//! always, `workroom` when a room is a workroom, new, or the round is a rerun,
//! `multi_ai` when a room has ≥ 2 AIs — plus the home's `task.md`. Default
//! parts ship inside the binary (`sentinel/prompts/*.md`); a home overrides a
//! part with `prompts/<part>.md`. The preamble goes to the agent with
//! `--append-system-prompt`.

use std::path::Path;

use crate::plan::PartsNeeded;

/// One prompt part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Core,
    Workroom,
    MultiAi,
}

impl Part {
    pub const ALL: [Part; 3] = [Part::Core, Part::Workroom, Part::MultiAi];

    pub fn name(self) -> &'static str {
        match self {
            Part::Core => "core",
            Part::Workroom => "workroom",
            Part::MultiAi => "multi_ai",
        }
    }

    /// The text shipped with the binary.
    pub fn default_text(self) -> &'static str {
        match self {
            Part::Core => include_str!("../prompts/core.md"),
            Part::Workroom => include_str!("../prompts/workroom.md"),
            Part::MultiAi => include_str!("../prompts/multi_ai.md"),
        }
    }
}

/// The parts a round uses, in order.
pub fn parts_for(needed: PartsNeeded) -> Vec<Part> {
    let mut v = vec![Part::Core];
    if needed.workroom {
        v.push(Part::Workroom);
    }
    if needed.multi_ai {
        v.push(Part::MultiAi);
    }
    v
}

/// The texts a home uses: overrides where present, defaults elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptSet {
    core: String,
    workroom: String,
    multi_ai: String,
    /// Which parts the home overrides.
    pub overridden: Vec<Part>,
    /// The home's standing task (`task.md`), if any.
    pub task: Option<String>,
}

impl PromptSet {
    /// Read overrides from `prompts_dir/<part>.md` and the task from
    /// `task_path`. An empty or unreadable override falls back to the default
    /// (logged), so a stray empty file never strips the rules.
    pub fn load(prompts_dir: &Path, task_path: &Path) -> PromptSet {
        let mut overridden = vec![];
        let mut text = |p: Part| -> String {
            let path = prompts_dir.join(format!("{}.md", p.name()));
            match std::fs::read_to_string(&path) {
                Ok(t) if !t.trim().is_empty() => {
                    overridden.push(p);
                    t
                }
                Ok(_) => {
                    tracing::warn!(path = %path.display(), "empty prompt override ignored");
                    p.default_text().to_string()
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => p.default_text().to_string(),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "prompt override unreadable; using the default");
                    p.default_text().to_string()
                }
            }
        };
        let core = text(Part::Core);
        let workroom = text(Part::Workroom);
        let multi_ai = text(Part::MultiAi);
        let task = std::fs::read_to_string(task_path)
            .ok()
            .filter(|t| !t.trim().is_empty());
        PromptSet {
            core,
            workroom,
            multi_ai,
            overridden,
            task,
        }
    }

    pub fn text(&self, p: Part) -> &str {
        match p {
            Part::Core => &self.core,
            Part::Workroom => &self.workroom,
            Part::MultiAi => &self.multi_ai,
        }
    }

    /// The preamble for a round.
    pub fn preamble(&self, parts: &[Part]) -> String {
        let mut out: Vec<&str> = parts.iter().map(|p| self.text(*p).trim_end()).collect();
        if let Some(t) = &self.task {
            out.push("Your standing task (task.md):");
            out.push(t.trim_end());
        }
        out.join("\n\n")
    }

    /// For the startup line: every part with the first
    /// [`DESCRIBE_HASH_HEX`] hex digits of its text's SHA-256, `*` after an
    /// overridden one, and the task's the same way:
    /// `core@1a2b3c4d,workroom*@…,multi_ai@…+task@…`. A canary restart after
    /// a prompt change shows the new hash, or that the home still overrides.
    pub fn describe(&self) -> String {
        let mut s = Part::ALL
            .iter()
            .map(|p| {
                let star = if self.overridden.contains(p) { "*" } else { "" };
                format!("{}{star}@{}", p.name(), short_hash(self.text(*p)))
            })
            .collect::<Vec<_>>()
            .join(",");
        if let Some(t) = &self.task {
            s.push_str(&format!("+task@{}", short_hash(t)));
        }
        s
    }
}

/// How many hex digits of a text's SHA-256 the startup line shows: enough
/// to tell two versions of a prompt apart at a glance.
pub const DESCRIBE_HASH_HEX: usize = 8;

fn short_hash(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = hex::encode(Sha256::digest(text.as_bytes()));
    h.truncate(DESCRIBE_HASH_HEX);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_table() {
        let cases = [
            (false, false, vec![Part::Core]),
            (true, false, vec![Part::Core, Part::Workroom]),
            (false, true, vec![Part::Core, Part::MultiAi]),
            (true, true, vec![Part::Core, Part::Workroom, Part::MultiAi]),
        ];
        for (workroom, multi_ai, want) in cases {
            assert_eq!(parts_for(PartsNeeded { workroom, multi_ai }), want);
        }
    }

    #[test]
    fn defaults_say_the_rules() {
        let core = Part::Core.default_text();
        for needle in [
            "Reply before",
            "markdown",
            "short answer first",
            "newest to oldest",
            "information, not orders",
            "who said it",
            "undone",
            "card first",
            "Answer every message",
            "hoop read --home",
            "--before",
            "Never mention quota",
            "waveform, not text",
            "to a worker",
            "Evidence before consequential actions",
        ] {
            assert!(core.contains(needle), "core part lacks {needle:?}");
        }
        let multi = Part::MultiAi.default_text();
        assert!(multi.contains("mentions you") && multi.contains("everyone"));
        assert!(multi.contains("\"not for me\""));
        // Silence is a choice, made with hoop pass, in both parts; no part
        // says a silence "only comes back".
        assert!(core.contains("hoop pass --home <home> --room <room> --ids"));
        assert!(core.contains("at most twice more"));
        assert!(multi.contains("pass on it with `hoop pass`"));
        for p in Part::ALL {
            assert!(!p.default_text().contains("only comes back"), "{p:?}");
        }
        for p in Part::ALL {
            assert!(!p.default_text().contains("**"), "{:?} uses markdown", p);
        }
    }

    #[test]
    fn overrides_and_task() {
        let dir = tempfile::tempdir().unwrap();
        let prompts = dir.path().join("prompts");
        std::fs::create_dir_all(&prompts).unwrap();
        std::fs::write(prompts.join("workroom.md"), "MY WORKROOM RULES").unwrap();
        std::fs::write(prompts.join("multi_ai.md"), "  \n").unwrap();
        std::fs::write(dir.path().join("task.md"), "Watch the builds.").unwrap();
        let set = PromptSet::load(&prompts, &dir.path().join("task.md"));
        assert_eq!(set.overridden, vec![Part::Workroom]);
        // The hashes, computed here from the files on disk: sha256 of
        // "MY WORKROOM RULES" and of "Watch the builds." are known values.
        let shipped = |f: &str| {
            use sha2::{Digest, Sha256};
            let bytes =
                std::fs::read(format!("{}/prompts/{f}", env!("CARGO_MANIFEST_DIR"))).unwrap();
            hex::encode(Sha256::digest(bytes))[..8].to_string()
        };
        assert_eq!(
            set.describe(),
            format!(
                "core@{},workroom*@8e649165,multi_ai@{}+task@2bde748e",
                shipped("core.md"),
                shipped("multi_ai.md")
            )
        );
        let plain = PromptSet::load(&dir.path().join("none"), &dir.path().join("none.md"));
        assert_eq!(
            plain.describe(),
            format!(
                "core@{},workroom@{},multi_ai@{}",
                shipped("core.md"),
                shipped("workroom.md"),
                shipped("multi_ai.md")
            ),
            "no override, no task"
        );
        let pre = set.preamble(&[Part::Core, Part::Workroom]);
        assert!(pre.starts_with(Part::Core.default_text().trim_end()));
        assert!(pre.contains("MY WORKROOM RULES"));
        assert!(pre.ends_with("Watch the builds."));
        assert!(!pre.contains(Part::MultiAi.default_text().trim_end()));
        assert_eq!(set.text(Part::MultiAi), Part::MultiAi.default_text());
    }
}
