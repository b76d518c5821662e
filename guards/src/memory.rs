//! memory_guard: refuse a Write / Edit / MultiEdit that would leave
//! `MEMORY.md` larger than the limit. The size is computed AFTER the edit,
//! from the file on disk and the edit in the payload, so an edit that
//! shrinks an oversized file is always allowed.

use crate::limits::MEMORY_FILE_NAME;

/// One text replacement of an Edit / MultiEdit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replace {
    pub old: String,
    pub new: String,
    pub all: bool,
}

/// What the tool call does to the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Write(String),
    Edits(Vec<Replace>),
}

/// Is this path the memory file?
pub fn is_memory_file(path: &str) -> bool {
    path.rsplit(['/', '\\']).next() == Some(MEMORY_FILE_NAME)
}

/// The file's size in bytes after `change` is applied to `current`
/// (`None` = the file does not exist yet). An edit whose `old` text is not
/// found changes nothing (the tool itself will fail).
pub fn size_after(current: Option<&str>, change: &Change) -> u64 {
    match change {
        Change::Write(content) => content.len() as u64,
        Change::Edits(edits) => {
            let mut text = current.unwrap_or("").to_string();
            for e in edits {
                if e.old.is_empty() {
                    if text.is_empty() {
                        text = e.new.clone();
                    }
                    continue;
                }
                if !text.contains(&e.old) {
                    continue;
                }
                text = if e.all {
                    text.replace(&e.old, &e.new)
                } else {
                    text.replacen(&e.old, &e.new, 1)
                };
            }
            text.len() as u64
        }
    }
}

/// The change a tool call makes, from its `tool_input`.
pub fn change_of(tool: &str, input: &serde_json::Value) -> Option<Change> {
    let s = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let replace = |v: &serde_json::Value| -> Option<Replace> {
        Some(Replace {
            old: s(v, "old_string")?,
            new: s(v, "new_string")?,
            all: v
                .get("replace_all")
                .and_then(|b| b.as_bool())
                .unwrap_or(false),
        })
    };
    match tool {
        "Write" => Some(Change::Write(
            s(input, "content").or_else(|| s(input, "contents"))?,
        )),
        "Edit" | "StrReplace" => Some(Change::Edits(vec![replace(input)?])),
        "MultiEdit" => Some(Change::Edits(
            input
                .get("edits")?
                .as_array()?
                .iter()
                .filter_map(replace)
                .collect(),
        )),
        _ => None,
    }
}

/// The refusal text, or `None` when the size is within the limit.
pub fn verdict(size: u64, limit: u64) -> Option<String> {
    (size > limit).then(|| {
        format!(
            "hoop memory_guard blocked this edit: {MEMORY_FILE_NAME} would be {size} bytes, \
             over the limit of {limit}. Instead: keep {MEMORY_FILE_NAME} an index of one-line \
             pointers — move details into topic files and remove stale entries, then retry."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_after_edits() {
        let w = Change::Write("abc".into());
        assert_eq!(size_after(Some("0123456789"), &w), 3);
        let e = Change::Edits(vec![Replace {
            old: "b".into(),
            new: "xyz".into(),
            all: true,
        }]);
        assert_eq!(size_after(Some("abab"), &e), 8);
        let once = Change::Edits(vec![Replace {
            old: "b".into(),
            new: "xyz".into(),
            all: false,
        }]);
        assert_eq!(size_after(Some("abab"), &once), 6);
        let missing = Change::Edits(vec![Replace {
            old: "zz".into(),
            new: "long text".into(),
            all: false,
        }]);
        assert_eq!(size_after(Some("abab"), &missing), 4);
        assert_eq!(size_after(None, &w), 3);
    }

    #[test]
    fn only_memory_md_and_limit() {
        assert!(is_memory_file("/x/.claude/projects/p/memory/MEMORY.md"));
        assert!(is_memory_file("MEMORY.md"));
        assert!(!is_memory_file("/x/MEMORY.md.bak"));
        assert!(!is_memory_file("/x/memory.md"));
        assert_eq!(verdict(10, 10), None);
        assert!(verdict(11, 10).unwrap().contains("11 bytes"));
    }

    #[test]
    fn changes_from_payloads() {
        let v = serde_json::json!({"file_path":"MEMORY.md","edits":[
            {"old_string":"a","new_string":"bb"},{"old_string":"c","new_string":"","replace_all":true}]});
        let c = change_of("MultiEdit", &v).unwrap();
        assert_eq!(size_after(Some("acac"), &c), 3);
        assert_eq!(change_of("Read", &v), None);
    }
}
