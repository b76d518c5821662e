//! The act_guard verdict table's format, read in one place by the crate's
//! table test, the end-to-end hook suite and nothing else: the table is a
//! directory of TAB-separated files (`guards/tests/data/act/*.tsv`, read in
//! name order) so that each rule family keeps its rows in its own file.
//!
//! Columns: the expected verdict (`allow` or the rule name that must block),
//! the class of command, `natural` or `adversarial`, and the command, where
//! `⏎` stands for a newline. Lines starting with `#` are comments.

use std::path::Path;

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The rule that must block; None = allow.
    pub want: Option<String>,
    pub class: String,
    /// `natural` (a spelling an honest agent writes) or `adversarial`.
    pub origin: String,
    pub cmd: String,
    /// `file:line`, for failure messages.
    pub at: String,
}

/// Every row of every `*.tsv` file in `dir`, files in name order. A line
/// that is not four columns with a known origin is an error naming it.
pub fn read_dir(dir: &Path) -> Result<Vec<Row>, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tsv"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no *.tsv file", dir.display()));
    }
    let mut rows = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        rows.extend(parse(&name, &text)?);
    }
    Ok(rows)
}

/// The rows of one file's text; `name` is used in `Row::at` and errors.
pub fn parse(name: &str, text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        let at = format!("{name}:{}", i + 1);
        let cols: Vec<&str> = l.splitn(4, '\t').collect();
        let [want, class, origin, cmd] = cols[..] else {
            return Err(format!("{at}: not four TAB-separated columns: {l:?}"));
        };
        if !matches!(origin, "natural" | "adversarial") {
            return Err(format!(
                "{at}: origin {origin:?} is not natural or adversarial"
            ));
        }
        rows.push(Row {
            want: (want != "allow").then(|| want.to_string()),
            class: class.to_string(),
            origin: origin.to_string(),
            cmd: cmd.replace('⏎', "\n"),
            at,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_refusals() {
        let ok = parse(
            "t.tsv",
            "# c\n\nrm\trm\tnatural\trm -rf a⏎b\nallow\tx\tadversarial\ta\tb\n",
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[0].want.as_deref(), Some("rm"));
        assert_eq!(ok[0].cmd, "rm -rf a\nb");
        assert_eq!(ok[0].at, "t.tsv:3");
        assert_eq!((ok[1].want.as_deref(), ok[1].cmd.as_str()), (None, "a\tb"));
        assert!(parse("t", "rm\trm\tnatural").unwrap_err().contains("t:1"));
        assert!(
            parse("t", "rm\trm\tnatual\tx")
                .unwrap_err()
                .contains("natual")
        );
    }
}
