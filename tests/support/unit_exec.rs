//! Reading a rendered systemd unit as systemd does, for the suites that
//! start a daemon from its `ExecStart=` (install, ops).

/// Split an `ExecStart=` value as systemd does for what the renderer writes
/// (double-quoted words with `\\` / `\"` escapes, `%%` for `%`).
pub fn exec_words(line: &str, instance: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            '\\' if quoted => cur.extend(chars.next()),
            '%' => match chars.next() {
                Some('%') => cur.push('%'),
                Some('i') => cur.push_str(instance),
                other => panic!("unexpected specifier %{other:?}"),
            },
            c if c.is_whitespace() && !quoted => {
                if any || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        words.push(cur);
    }
    words
}
