//! Secrets leaving the machine (rule `steal`): a command that sends data
//! off the machine (HTTP clients, sockets, remote copies, remote shells,
//! buckets, mail and file drops: [`SENDERS`]) with a secret file among what
//! it sends, on its stdin or piped in from a command that read one. Keys
//! and tokens cannot be called back once sent. Decoders ([`is_decoder`])
//! mark a stream that cannot be read here.

use super::Rule;
use super::rules::Hit;
use super::shell::{Analyser, Cmd, Flow, Word};

pub(super) const INSTEAD_STEAL: &str = "secrets never leave this machine; if a service needs a credential, ask a human to configure it";

/// Commands that send data off the machine: the command, the words that
/// must follow it (in order) and how it sends.
const SENDERS: &[(&str, &[&str], Sender)] = &[
    // HTTP clients: `-d @file`, `-F f=@file`, `-T file`, `--post-file`.
    ("curl", &[], Sender::Url),
    ("wget", &[], Sender::Url),
    ("http", &[], Sender::Url),  // HTTPie
    ("https", &[], Sender::Url), // HTTPie
    ("xh", &[], Sender::Url),
    // Raw sockets: whatever is on stdin goes to the peer.
    ("nc", &[], Sender::Socket),
    ("ncat", &[], Sender::Socket),
    ("netcat", &[], Sender::Socket),
    ("socat", &[], Sender::Socket),
    ("telnet", &[], Sender::Socket),
    // Copies whose last argument is `host:path` / `remote:path`.
    ("scp", &[], Sender::Copy),
    ("rsync", &[], Sender::Copy),
    ("sftp", &[], Sender::Copy),
    ("rclone", &[], Sender::Copy), // rclone copy|sync|move SRC remote:path
    ("kubectl", &["cp"], Sender::Copy), // kubectl cp FILE pod:/path
    // Remote shells: stdin goes to the remote side. The remote command's
    // words name the remote machine's files, not ours.
    ("ssh", &[], Sender::Remote),
    // Cloud storage copies: an upload when the destination is a bucket; a
    // download (`aws s3 cp s3://b/.env ./.env`) is not a leak.
    ("aws", &["s3"], Sender::Bucket),
    ("gsutil", &[], Sender::Bucket),
    ("gcloud", &["storage"], Sender::Bucket),
    ("azcopy", &[], Sender::Bucket),
    ("s3cmd", &["put"], Sender::Always),
    ("b2", &["upload-file"], Sender::Always),
    ("az", &["storage", "upload"], Sender::Always),
    // Mail and file drops: everything named goes out.
    ("mail", &[], Sender::Always),
    ("mailx", &[], Sender::Always),
    ("mutt", &[], Sender::Always),
    ("sendmail", &[], Sender::Always),
    ("ftp", &[], Sender::Always),
    ("lftp", &[], Sender::Always),
    ("croc", &["send"], Sender::Always),
    ("wormhole", &["send"], Sender::Always),
    ("gh", &["gist"], Sender::Always),
    ("gh", &["release", "upload"], Sender::Always),
];

/// How `name ARGV` sends data off the machine, if it does.
fn sender_kind(name: &str, argv: &[Word]) -> Option<Sender> {
    SENDERS
        .iter()
        .find(|(n, sub, _)| {
            *n == name && {
                let mut it = argv[1..].iter();
                sub.iter().all(|want| it.any(|w| w.text == *want))
            }
        })
        .map(|(_, _, kind)| *kind)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sender {
    Url,
    Socket,
    Copy,
    Always,
    Remote,
    Bucket,
}

/// Option values that are not data being sent: client certificates,
/// output files, identity and config files.
fn exempt_opts(kind: Sender) -> &'static [&'static str] {
    match kind {
        Sender::Url => &[
            "-o",
            "--output",
            "-O",
            "--output-document",
            "-E",
            "--cert",
            "--key",
            "--cacert",
            "--capath",
            "-K",
            "--config",
            "--netrc-file",
            "-c",
            "--cookie-jar",
            "-D",
            "--dump-header",
            "--certificate",
            "--private-key",
            "--ca-certificate",
            "--append-output",
            "--output-file",
        ],
        Sender::Copy | Sender::Always | Sender::Remote => {
            &["-i", "-F", "-o", "-e", "--rsh", "-J", "-S"]
        }
        Sender::Socket | Sender::Bucket => &[],
    }
}

pub(super) fn is_loopback(host: &str) -> bool {
    let h = host
        .split("://")
        .nth(1)
        .unwrap_or(host)
        .split(['/', '?'])
        .next()
        .unwrap_or("");
    let h = h.rsplit('@').next().unwrap_or(h);
    let h = if h.starts_with('[') {
        h.split(']').next().unwrap_or(h).trim_start_matches('[')
    } else {
        h.split(':').next().unwrap_or(h)
    };
    h == "localhost" || h.starts_with("127.") || h == "::1" || h == "0.0.0.0"
}

fn is_remote_copy_dest(t: &str) -> bool {
    if t.starts_with("rsync://") {
        return true;
    }
    match t.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

/// The arguments without the sender's exempt options and the value each one
/// takes (`-o out.txt`: where the answer goes, not what is sent).
fn without_exempt_options<'a>(args: &'a [Word], exempt: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut words = args.iter();
    while let Some(w) = words.next() {
        if exempt.contains(&w.text.as_str()) {
            words.next();
        } else {
            out.push(w);
        }
    }
    out
}

pub(super) fn verdict(
    a: &Analyser<'_>,
    name: &str,
    argv: &[Word],
    cmd: &Cmd,
    input: &Flow,
    hits: &mut Vec<Hit>,
) {
    let Some(kind) = sender_kind(name, argv) else {
        return;
    };
    let exempt = exempt_opts(kind);
    // Is the destination off the machine?
    let args = without_exempt_options(&argv[1..], exempt);
    let positional: Vec<&Word> = args
        .iter()
        .copied()
        .filter(|w| !w.text.starts_with('-'))
        .collect();
    let remote = match kind {
        Sender::Always => true,
        Sender::Url => {
            let mut urls: Vec<&&Word> = positional
                .iter()
                .filter(|w| w.text.contains("://"))
                .collect();
            if urls.is_empty() {
                // Bare hosts (`curl example.com`): not data, not secrets.
                urls = positional
                    .iter()
                    .filter(|w| {
                        !w.text.starts_with('@')
                            && !w.text.contains('=')
                            && !is_secret_here(a, &w.text)
                    })
                    .collect();
            }
            urls.is_empty() || urls.iter().any(|w| !is_loopback(&w.text))
        }
        Sender::Socket => positional.first().is_none_or(|w| !is_loopback(&w.text)),
        Sender::Remote => positional.first().is_none_or(|w| !is_loopback(&w.text)),
        Sender::Bucket => positional.last().is_some_and(|w| {
            ["s3://", "gs://", "az://", "https://"]
                .iter()
                .any(|p| w.text.starts_with(p))
        }),
        Sender::Copy => {
            name == "sftp"
                || positional
                    .last()
                    .is_some_and(|w| is_remote_copy_dest(&w.text))
        }
    };
    if !remote {
        return;
    }
    // Does a secret go with it?
    let mut leaked: Option<String> = None;
    if input.secret {
        leaked = Some("a secret file's content piped into it".into());
    }
    if leaked.is_none()
        && let Some(f) = cmd.in_files.iter().find(|w| is_secret_here(a, &w.text))
    {
        leaked = Some(format!("`{}` fed to its stdin", f.text));
    }
    if leaked.is_none() {
        let candidates: Vec<&Word> = match kind {
            // Only the sources, not the destination.
            Sender::Copy | Sender::Bucket => {
                positional[..positional.len().saturating_sub(1)].to_vec()
            }
            // Only what the local shell expands into the remote command.
            Sender::Remote => args
                .iter()
                .copied()
                .filter(|w| w.dynamic && (w.text.contains("$(") || w.text.contains('`')))
                .collect(),
            // Everything but a literal destination URL.
            _ => args
                .iter()
                .copied()
                .filter(|w| {
                    !(w.text.contains("://") && !w.text.contains("$(") && !w.text.contains('`'))
                })
                .collect(),
        };
        if let Some(w) = candidates.iter().find(|w| is_secret_here(a, &w.text)) {
            leaked = Some(format!("`{}`", w.text));
        }
    }
    if let Some(what) = leaked {
        hits.push(Hit::new(
            Rule::Steal,
            format!("{what} would leave the machine through {name}"),
            INSTEAD_STEAL,
        ));
    }
}

/// Does this command turn encoded text back into bytes (`base64 -d`,
/// `xxd -r`, `openssl enc -d`, `gunzip`)?
pub(super) fn is_decoder(name: &str, argv: &[Word]) -> bool {
    let has = |f: &[&str]| argv[1..].iter().any(|w| f.contains(&w.text.as_str()));
    match name {
        "base64" | "base32" | "basenc" => has(&["-d", "--decode", "-D"]),
        "xxd" => has(&["-r", "-revert"]),
        "openssl" => has(&["-d"]) || has(&["base64"]),
        "gunzip" | "zcat" | "uudecode" | "rev" => true,
        "gzip" | "xz" | "bzip2" | "zstd" => has(&["-d", "--decompress"]),
        _ => false,
    }
}

/// Does the stream out of this stage carry a secret?
pub(super) fn flows_secret(
    a: &Analyser<'_>,
    name: &str,
    argv: &[Word],
    cmd: &Cmd,
    input: &Flow,
) -> bool {
    if matches!(
        name,
        "echo" | "printf" | "true" | ":" | "ls" | "stat" | "test" | "["
    ) {
        return false;
    }
    input.secret
        || cmd.in_files.iter().any(|w| is_secret_here(a, &w.text))
        || argv[1..].iter().any(|w| is_secret_here(a, &w.text))
}

/// Is `text` a secret file, or a copy of one made earlier in this text?
pub(super) fn is_secret_here(a: &Analyser<'_>, text: &str) -> bool {
    mentions_secret(text)
        || (!a.secret_copies.is_empty()
            && text
                .split(|c: char| c.is_whitespace() || "@=,;|<>\"'()`{}[]".contains(c))
                .any(|p| {
                    let p = p.trim_start_matches("./");
                    a.secret_copies.iter().any(|c| {
                        p == c
                            || p.strip_prefix(c.as_str())
                                .is_some_and(|r| r.starts_with('/'))
                    })
                }))
}

/// Remember where this command puts a copy or a derivation of a secret:
/// the file its output is redirected to, `tee`'s files, `cp`/`mv`'s
/// destination, `tar -f` / `zip` archives.
pub(super) fn note_secret_copies(
    a: &mut Analyser<'_>,
    name: &str,
    argv: &[Word],
    cmd: &Cmd,
    input: &Flow,
    secret_out: bool,
) {
    let mut found: Vec<String> = Vec::new();
    if secret_out {
        found.extend(cmd.out_files.iter().map(|w| w.text.clone()));
    }
    let positional: Vec<&Word> = argv[1..]
        .iter()
        .filter(|w| !w.text.starts_with('-'))
        .collect();
    match name {
        "tee" if input.secret => found.extend(positional.iter().map(|w| w.text.clone())),
        "cp" | "mv" | "install" | "ditto" => {
            if let Some((dest, srcs)) = positional.split_last()
                && srcs.iter().any(|w| is_secret_here(a, &w.text))
            {
                found.push(dest.text.clone());
            }
        }
        "tar" | "bsdtar" | "gtar" if secret_out => {
            // `-f ARCHIVE`, `czf ARCHIVE`, `--file=ARCHIVE`.
            for (k, w) in argv[1..].iter().enumerate() {
                let t = w.text.as_str();
                if let Some(f) = t.strip_prefix("--file=") {
                    found.push(f.to_string());
                } else if (t == "--file"
                    || (!t.starts_with("--") && t.ends_with('f') && (k == 0 || t.starts_with('-'))))
                    && let Some(f) = argv.get(k + 2)
                {
                    found.push(f.text.clone());
                }
            }
        }
        "zip" | "7z" | "7za" | "rar" if secret_out => {
            let skip = usize::from(name != "zip"); // `7z a ARCHIVE`
            if let Some(w) = positional.get(skip) {
                found.push(w.text.clone());
            }
        }
        _ => {}
    }
    for f in found {
        let f = f.trim_start_matches("./").to_string();
        if !f.is_empty() && !f.starts_with("/dev/") && !a.secret_copies.contains(&f) {
            a.secret_copies.push(f);
        }
    }
}

/// Does this text name a secret file anywhere?
pub(super) fn mentions_secret(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || "@=,;|<>\"'()`{}[]:".contains(c))
        .any(is_secret_path)
}

/// How a secret file is recognised.
#[derive(Clone, Copy)]
enum Secret {
    /// The file or directory name, anywhere.
    Name(&'static str),
    /// A name inside a directory of this name (`.aws/credentials`).
    In(&'static str, &'static str),
    /// Anything under a directory path ending so (`.config/gcloud`).
    Under(&'static str),
    /// A file name ending so (`.p12`).
    Ext(&'static str),
}

/// Token and key files every developer machine has, one entry each: what
/// it holds. A file named here never leaves the machine.
const SECRET_FILES: &[(Secret, &str)] = &[
    (Secret::Name("id_rsa"), "SSH private key"),
    (Secret::Name("id_dsa"), "SSH private key"),
    (Secret::Name("id_ecdsa"), "SSH private key"),
    (Secret::Name("id_ed25519"), "SSH private key"),
    (
        Secret::Name("id_ecdsa_sk"),
        "SSH private key (security key)",
    ),
    (
        Secret::Name("id_ed25519_sk"),
        "SSH private key (security key)",
    ),
    (Secret::Name(".ssh"), "the SSH directory: keys"),
    (Secret::Name(".gnupg"), "GnuPG private keys"),
    (Secret::Under(".gnupg"), "GnuPG private keys"),
    (Secret::Under(".aws"), "AWS credentials and profiles"),
    (Secret::In(".aws", "credentials"), "AWS access keys"),
    (Secret::Under(".aws/sso/cache"), "AWS SSO tokens"),
    (Secret::Under(".config/gcloud"), "Google Cloud credentials"),
    (
        Secret::Name("application_default_credentials.json"),
        "Google Cloud ADC",
    ),
    (Secret::Under(".azure"), "Azure CLI tokens"),
    (Secret::Under(".kube"), "Kubernetes cluster credentials"),
    (
        Secret::In(".docker", "config.json"),
        "container registry logins",
    ),
    (Secret::Name(".netrc"), "logins for curl, git, ftp"),
    (Secret::Name(".git-credentials"), "git credential store"),
    (
        Secret::In("git", "credentials"),
        "git credential store (XDG)",
    ),
    (Secret::Name(".pypirc"), "PyPI upload token"),
    (Secret::Name(".npmrc"), "npm registry token"),
    (Secret::Name(".yarnrc.yml"), "Yarn registry token"),
    (Secret::In(".cargo", "credentials.toml"), "crates.io token"),
    (
        Secret::In(".cargo", "credentials"),
        "crates.io token (old name)",
    ),
    (Secret::In(".gem", "credentials"), "RubyGems API key"),
    (Secret::In(".m2", "settings.xml"), "Maven server passwords"),
    (
        Secret::In(".gradle", "gradle.properties"),
        "Gradle signing and publishing keys",
    ),
    (
        Secret::In(".claude", ".credentials.json"),
        "Claude Code OAuth tokens",
    ),
    (Secret::In(".codex", "auth.json"), "Codex CLI tokens"),
    (Secret::In("gh", "hosts.yml"), "GitHub CLI token"),
    (Secret::In("hub", "hub"), "hub GitHub token"),
    (
        Secret::Under(".config/github-copilot"),
        "GitHub Copilot tokens",
    ),
    (
        Secret::In(".terraform.d", "credentials.tfrc.json"),
        "Terraform Cloud token",
    ),
    (Secret::Name(".vault-token"), "HashiCorp Vault token"),
    (Secret::Name(".pgpass"), "PostgreSQL passwords"),
    (Secret::Name(".my.cnf"), "MySQL password"),
    (Secret::Name(".s3cfg"), "s3cmd keys"),
    (Secret::Name(".boto"), "gsutil / boto keys"),
    (
        Secret::In("rclone", "rclone.conf"),
        "rclone remotes' credentials",
    ),
    (Secret::Under(".config/doctl"), "DigitalOcean token"),
    (Secret::Under(".config/stripe"), "Stripe keys"),
    (Secret::In(".fly", "config.yml"), "Fly.io token"),
    (Secret::Under(".password-store"), "pass password store"),
    (Secret::Name(".token.json"), "hoop's cached backend JWT"),
    (Secret::Name(".mcp_key"), "a hoop home's MCP bearer key"),
    (
        Secret::Name(".claude.json"),
        "Claude Code's config: MCP bearer keys",
    ),
    (
        Secret::Name(".docker"),
        "the Docker directory: registry logins",
    ),
    (Secret::Name(".hoop"), "hoop's root: tokens and keys"),
    (Secret::Name("agent.env"), "hoop agent credentials"),
    (Secret::Name(".env"), "a project's secrets"),
    (Secret::Name(".envrc"), "direnv environment, often secrets"),
    (
        Secret::Name("credentials.json"),
        "OAuth client or service credentials",
    ),
    (
        Secret::Name("serviceAccountKey.json"),
        "Firebase service account key",
    ),
    (Secret::Ext(".p12"), "certificate with its private key"),
    (Secret::Ext(".pfx"), "certificate with its private key"),
    (Secret::Ext(".jks"), "Java / Android signing keystore"),
    (Secret::Ext(".keystore"), "Android signing keystore"),
    (Secret::Ext(".p8"), "App Store Connect API key"),
];

fn is_secret_path(p: &str) -> bool {
    let p = p.trim_end_matches('/');
    if p.is_empty() {
        return false;
    }
    let mut comps = p.rsplit('/');
    let base = comps.next().unwrap_or("");
    let parent = comps.next().unwrap_or("");
    if base.ends_with(".pub") {
        return false;
    }
    // Inside ~/.ssh everything but public keys, known_hosts and config.
    if parent == ".ssh" {
        return !(base.starts_with("known_hosts")
            || base == "config"
            || base.starts_with("authorized_keys"));
    }
    // hoop's root holds the homes (tokens, MCP keys) and agent.env.
    if parent == ".hoop" {
        return true;
    }
    if let Some(suffix) = base.strip_prefix(".env.") {
        return !matches!(suffix, "example" | "sample" | "template" | "dist");
    }
    SECRET_FILES.iter().any(|(m, _)| match *m {
        Secret::Name(n) => base == n,
        Secret::In(dir, n) => parent == dir && base == n,
        Secret::Under(dir) => p.contains(&format!("{dir}/")) || p.ends_with(dir),
        Secret::Ext(e) => base.len() > e.len() && base.ends_with(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_paths() {
        for yes in [
            "~/.ssh/id_rsa",
            "/home/u/.ssh/id_ed25519",
            "id_rsa",
            ".env",
            "./.env.local",
            "/r/h/.token.json",
            "agent.env",
            "~/.aws/credentials",
            "~/.ssh",
            "~/.kube/config",
            "~/.config/gcloud/application_default_credentials.json",
        ] {
            assert!(is_secret_path(yes), "{yes}");
        }
        for no in [
            "~/.ssh/id_rsa.pub",
            "~/.ssh/known_hosts",
            ".env.example",
            "README.md",
            "envy",
            "src/env.rs",
            "~/.ssh/config",
        ] {
            assert!(!is_secret_path(no), "{no}");
        }
        assert!(mentions_secret("file=@/home/u/.ssh/id_rsa"));
        assert!(mentions_secret("$(cat .env)"));
    }
}
