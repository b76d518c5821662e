//! Long options as the tools themselves read them. GNU `getopt_long` and
//! git's parse-options take any unique prefix of a long option for the
//! option (`rm --recursiv`, `git reset --har`), an exact name always wins,
//! and an ambiguous prefix makes the tool refuse to run. So the prefixes are
//! derived here from each command's list of long options, never listed.
//!
//! A family gives the WHOLE list of its command's long options, each with
//! what it means to the family (most mean nothing: `Other`), so that a
//! prefix shared with a harmless option is known to be ambiguous. A prefix
//! whose every candidate means the same thing (`git push --forc`: `--force`,
//! `--force-with-lease`, `--force-if-includes`) is that thing: the tool
//! either refuses it or does it, and judging it so costs nothing.

/// What `arg` (`--name` or `--name=value`) means among `table` (names
/// without the leading `--`): the meaning of the exact name, else the
/// meaning shared by every option it is a prefix of; `None` for a short
/// option, `--` itself, an unknown name or an ambiguous prefix.
pub(super) fn meaning<T: Copy + PartialEq>(arg: &str, table: &[(&str, T)]) -> Option<T> {
    meaning_in(arg, &[table])
}

/// [`meaning`] over a list held in parts (git's subcommands share groups
/// of options: `checkout` is the common ones, the branch-switching ones
/// and the path ones); the parts are one list.
pub(super) fn meaning_in<T: Copy + PartialEq>(arg: &str, parts: &[&[(&str, T)]]) -> Option<T> {
    let name = name(arg)?;
    let table = || parts.iter().flat_map(|p| p.iter());
    if let Some((_, m)) = table().find(|(n, _)| *n == name) {
        return Some(*m);
    }
    let mut found: Option<T> = None;
    for (n, m) in table() {
        if n.starts_with(name) {
            match found {
                None => found = Some(*m),
                Some(f) if f == *m => {}
                Some(_) => return None,
            }
        }
    }
    found
}

/// Is `arg` the long option `long` (given without `--`), or a prefix of it,
/// for a command whose other long options are not held here? Any prefix
/// counts: when it is ambiguous the tool refuses to run, so counting it
/// cannot block a command that would have done something else.
pub(super) fn is_prefix_of(arg: &str, long: &str) -> bool {
    name(arg).is_some_and(|n| long.starts_with(n))
}

/// The option's name: `--name[=value]` without dashes and value; `None`
/// when `arg` is not a long option.
fn name(arg: &str) -> Option<&str> {
    let rest = arg.strip_prefix("--")?;
    let n = rest.split_once('=').map_or(rest, |(n, _)| n);
    (!n.is_empty()).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum M {
        Force,
        Follow,
        Dry,
    }

    const PUSH: &[(&str, M)] = &[
        ("force", M::Force),
        ("force-with-lease", M::Force),
        ("force-if-includes", M::Force),
        ("follow-tags", M::Follow),
        ("dry-run", M::Dry),
    ];

    #[test]
    fn unique_prefix_exact_and_shared_meaning() {
        assert_eq!(meaning("--dry", PUSH), Some(M::Dry));
        assert_eq!(meaning("--force", PUSH), Some(M::Force));
        assert_eq!(meaning("--forc", PUSH), Some(M::Force));
        assert_eq!(meaning("--force-w=main", PUSH), Some(M::Force));
        assert_eq!(meaning("--follow", PUSH), Some(M::Follow));
        // Ambiguous between meanings: the tool refuses it.
        assert_eq!(meaning("--fo", PUSH), None);
        assert_eq!(meaning("--f", PUSH), None);
        assert_eq!(meaning("--", PUSH), None);
        assert_eq!(meaning("-f", PUSH), None);
        assert_eq!(meaning("--forcex", PUSH), None);
    }

    #[test]
    fn a_list_in_parts_reads_as_one() {
        // Every way of cutting PUSH in two gives the whole list's answers:
        // an exact name in one part beats prefixes in the other, and a
        // prefix ambiguous across the cut stays ambiguous.
        for cut in 0..=PUSH.len() {
            let parts: &[&[(&str, M)]] = &[&PUSH[..cut], &PUSH[cut..]];
            for arg in [
                "--dry",
                "--force",
                "--forc",
                "--force-w=main",
                "--follow",
                "--fo",
                "--f",
                "--forcex",
            ] {
                assert_eq!(
                    meaning_in(arg, parts),
                    meaning(arg, PUSH),
                    "{arg} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn prefix_without_a_table() {
        assert!(is_prefix_of("--al", "all"));
        assert!(is_prefix_of("--si=0", "size"));
        assert!(!is_prefix_of("--", "all"));
        assert!(!is_prefix_of("-a", "all"));
        assert!(!is_prefix_of("--alx", "all"));
    }
}
