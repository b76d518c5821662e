//! Force pushes by another name: `--force-with-lease` and
//! `--force-if-includes` still replace the remote branch with local history
//! (the lease only checks that nobody pushed since the last fetch), so to a
//! protected branch they are force pushes like `--force` and `+refspec`.
//! Git accepts any unique prefix of a long option (`--force-w`), so the
//! prefixes are derived here, not listed.

/// Long options of `git push` that force the update.
const LEASE_OPTIONS: &[&str] = &["--force-with-lease", "--force-if-includes"];

/// Shortest prefix git reads as one of them: `--force-` (shorter ones are
/// `--force` itself or ambiguous, which git refuses).
const MIN_PREFIX: usize = "--force-".len();

/// Does this `git push` option (with or without `=VALUE`) force the update?
pub(super) fn is_lease_option(opt: &str) -> bool {
    let name = opt.split_once('=').map_or(opt, |(n, _)| n);
    name.len() >= MIN_PREFIX && LEASE_OPTIONS.iter().any(|o| o.starts_with(name))
}
