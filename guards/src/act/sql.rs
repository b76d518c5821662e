//! Database clients: where each takes SQL from (read with the client's own
//! option grammar: `psql -tAc SQL` is the flags `t`, `A` and `c` with the
//! SQL as its value; `mysql -pSECRET` attaches its only optional value), the
//! drop tools (`dropdb`, `mysqladmin drop`, `redis-cli FLUSHALL`), and the
//! one SQL reader that finds `DROP`/`TRUNCATE` outside string literals,
//! quoted identifiers, dollar-quoted bodies and comments.

use super::Rule;
use super::rules::Hit;
use super::shell::Word;

/// How one database client takes SQL.
pub(crate) struct Client {
    /// Command names (and a subcommand word: `cockroach sql`).
    pub names: &'static [&'static str],
    pub sub: Option<&'static str>,
    /// Short options whose value is SQL (`c` in `psql -tAc …`).
    pub sql_short: &'static str,
    /// Long options (or single-dash words, `-cmd`) whose value is SQL.
    pub sql_long: &'static [&'static str],
    /// Short options that take a value, attached or as the next word.
    pub short_value: &'static str,
    /// Short options whose value can only be attached (`mysql -pSECRET`).
    pub short_attached: &'static str,
    /// Long options (or single-dash words) that take the next word as value.
    pub long_value: &'static [&'static str],
    /// Positional arguments from this index on are SQL (`sqlite3 DB SQL`).
    pub sql_positional_from: Option<usize>,
}

/// Every client. Comments give the grammar each follows.
pub(crate) static CLIENTS: &[Client] = &[
    // psql [OPTION]… [DBNAME [USER]]: getopt; -c/--command SQL.
    Client {
        names: &["psql"],
        sub: None,
        sql_short: "c",
        sql_long: &["--command"],
        short_value: "cdfhpUvPTLoFRW",
        short_attached: "",
        long_value: &[
            "--dbname",
            "--file",
            "--host",
            "--port",
            "--username",
            "--set",
            "--variable",
            "--pset",
            "--table-attr",
            "--log-file",
            "--output",
            "--field-separator",
            "--record-separator",
        ],
        sql_positional_from: None,
    },
    // mysql / mariadb [OPTIONS] [database]: getopt; -e/--execute SQL; -p
    // takes its password only attached.
    Client {
        names: &["mysql", "mariadb"],
        sub: None,
        sql_short: "e",
        sql_long: &["--execute"],
        short_value: "eDhPSuOT",
        short_attached: "p",
        long_value: &[
            "--database",
            "--host",
            "--port",
            "--socket",
            "--user",
            "--default-character-set",
            "--defaults-file",
            "--login-path",
            "--init-command",
        ],
        sql_positional_from: None,
    },
    // sqlite3 [OPTIONS] FILENAME [SQL…]: single-dash word options; -cmd SQL.
    Client {
        names: &["sqlite3", "sqlite"],
        sub: None,
        sql_short: "",
        sql_long: &["-cmd", "--cmd"],
        short_value: "",
        short_attached: "",
        long_value: &[
            "-separator",
            "-newline",
            "-nullvalue",
            "-init",
            "-vfs",
            "-mmap",
            "-maxsize",
            "-escape",
            "-pagecache",
            "-lookaside",
        ],
        sql_positional_from: Some(1),
    },
    // duckdb [OPTIONS] [FILENAME [SQL…]]: -c SQL (run and exit), -cmd SQL.
    Client {
        names: &["duckdb"],
        sub: None,
        sql_short: "",
        sql_long: &["-c", "-cmd", "-s"],
        short_value: "",
        short_attached: "",
        long_value: &["-init", "-separator", "-newline", "-nullvalue"],
        sql_positional_from: Some(1),
    },
    // clickhouse-client / clickhouse client: -q/--query SQL.
    Client {
        names: &["clickhouse-client", "clickhouse"],
        sub: Some("client"),
        sql_short: "q",
        sql_long: &["--query"],
        short_value: "qhudC",
        short_attached: "",
        long_value: &[
            "--host",
            "--port",
            "--user",
            "--password",
            "--database",
            "--config-file",
            "--format",
            "--queries-file",
        ],
        sql_positional_from: None,
    },
    // sqlcmd: -Q SQL (run and exit), -q SQL (run, then interactive).
    Client {
        names: &["sqlcmd"],
        sub: None,
        sql_short: "Qq",
        sql_long: &[],
        short_value: "QqSUPdiosHlhtwWfAaLc",
        short_attached: "",
        long_value: &[],
        sql_positional_from: None,
    },
    // cockroach sql: -e/--execute SQL.
    Client {
        names: &["cockroach"],
        sub: Some("sql"),
        sql_short: "e",
        sql_long: &["--execute"],
        short_value: "edu",
        short_attached: "",
        long_value: &[
            "--url",
            "--host",
            "--port",
            "--database",
            "--user",
            "--certs-dir",
            "--format",
            "--set",
        ],
        sql_positional_from: None,
    },
    // usql [URL]: -c/--command SQL.
    Client {
        names: &["usql"],
        sub: None,
        sql_short: "c",
        sql_long: &["--command"],
        short_value: "cfoPvFRTJ",
        short_attached: "",
        long_value: &[
            "--file",
            "--out",
            "--set",
            "--variable",
            "--pset",
            "--config",
        ],
        sql_positional_from: None,
    },
];

/// The client `name` (with `argv[1]`, for subcommand forms) names, and
/// where its arguments start.
pub(crate) fn client(name: &str, argv: &[Word]) -> Option<(&'static Client, usize)> {
    let c = CLIENTS.iter().find(|c| c.names.contains(&name))?;
    match c.sub {
        // `clickhouse-client` needs no subcommand; `clickhouse` does.
        Some(sub) if name == "clickhouse" || name == "cockroach" => {
            (argv.get(1).map(|w| w.text.as_str()) == Some(sub)).then_some((c, 2))
        }
        _ => Some((c, 1)),
    }
}

/// The SQL texts the client runs from its arguments.
pub(crate) fn sql_args(c: &Client, argv: &[Word], start: usize) -> Vec<String> {
    let mut sql = Vec::new();
    let mut positional = 0usize;
    let mut k = start;
    while k < argv.len() {
        let t = argv[k].text.as_str();
        let next = argv.get(k + 1).map(|w| w.text.clone());
        k += 1;
        if t == "--" {
            continue;
        }
        if let Some((opt, v)) = t.split_once('=')
            && t.starts_with("--")
        {
            if c.sql_long.contains(&opt) {
                sql.push(v.to_string());
            }
            continue;
        }
        if c.sql_long.contains(&t) {
            sql.extend(next);
            k += 1;
            continue;
        }
        if c.long_value.contains(&t) {
            k += 1;
            continue;
        }
        if t.starts_with("--") || (t.starts_with('-') && c.short_value.is_empty()) {
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-').filter(|s| !s.is_empty()) {
            // getopt: flags until the first option that takes a value; the
            // rest of the word (or the next word) is that value.
            for (pos, ch) in cluster.char_indices() {
                let attached = &cluster[pos + ch.len_utf8()..];
                if c.short_attached.contains(ch) {
                    break;
                }
                if c.short_value.contains(ch) {
                    let value = if attached.is_empty() {
                        k += 1;
                        next.clone()
                    } else {
                        Some(attached.to_string())
                    };
                    if c.sql_short.contains(ch) {
                        sql.extend(value);
                    }
                    break;
                }
            }
            continue;
        }
        if c.sql_positional_from.is_some_and(|from| positional >= from) {
            sql.push(t.to_string());
        }
        positional += 1;
    }
    sql
}

/// `DROP TABLE|DATABASE|SCHEMA`, `TRUNCATE`, or a `DELETE FROM` without
/// `WHERE`, outside string literals (`'…'`, `"…"`, `` `…` ``, `$tag$…$tag$`)
/// and comments (`--`, `#`, `/* */`).
pub(crate) fn destructive_sql(sql: &str) -> Option<&'static str> {
    let mut statements: Vec<Vec<String>> = vec![Vec::new()];
    let b = sql.as_bytes();
    let mut i = 0;
    let mut word = String::new();
    let flush = |word: &mut String, st: &mut Vec<Vec<String>>| {
        if !word.is_empty() {
            if let Some(last) = st.last_mut() {
                last.push(word.to_ascii_uppercase());
            }
            word.clear();
        }
    };
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() || c == b'_' {
            word.push(c as char);
            i += 1;
            continue;
        }
        flush(&mut word, &mut statements);
        match c {
            b'\'' | b'"' | b'`' => {
                // A literal or quoted identifier; a doubled quote or a
                // backslash escape stays inside.
                i += 1;
                while i < b.len() {
                    if b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == c {
                        if b.get(i + 1) == Some(&c) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'$' => {
                // `$tag$ … $tag$` (PostgreSQL dollar quoting).
                let tag_end = b[i + 1..]
                    .iter()
                    .position(|&x| !(x.is_ascii_alphanumeric() || x == b'_'))
                    .map(|p| i + 1 + p);
                match tag_end {
                    Some(e)
                        if b[e] == b'$' && !b[i + 1..e].first().is_some_and(u8::is_ascii_digit) =>
                    {
                        let tag = &b[i..=e];
                        let body = e + 1;
                        i = b[body..]
                            .windows(tag.len())
                            .position(|w| w == tag)
                            .map_or(b.len(), |p| body + p + tag.len());
                    }
                    _ => i += 1,
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = b[i..]
                    .iter()
                    .position(|&x| x == b'\n')
                    .map_or(b.len(), |p| i + p);
            }
            b'#' => {
                i = b[i..]
                    .iter()
                    .position(|&x| x == b'\n')
                    .map_or(b.len(), |p| i + p);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = b[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(b.len(), |p| i + 2 + p + 2);
            }
            b';' => {
                statements.push(Vec::new());
                i += 1;
            }
            _ => i += 1,
        }
    }
    flush(&mut word, &mut statements);
    for toks in &statements {
        for (i, t) in toks.iter().enumerate() {
            match t.as_str() {
                "TRUNCATE" => return Some("TRUNCATE"),
                "DROP" => match toks.get(i + 1).map(String::as_str) {
                    Some("TABLE") => return Some("DROP TABLE"),
                    Some("DATABASE") => return Some("DROP DATABASE"),
                    Some("SCHEMA") => return Some("DROP SCHEMA"),
                    _ => {}
                },
                "DELETE"
                    if toks.get(i + 1).map(String::as_str) == Some("FROM")
                        && !toks[i..].iter().any(|t| t == "WHERE") =>
                {
                    return Some("DELETE without WHERE");
                }
                _ => {}
            }
        }
    }
    None
}

/// Drop tools: the database (or everything) they destroy, if they would.
/// What reaches a client on stdin (`echo FLUSHALL | redis-cli`, a heredoc,
/// `<<<`) is read like its command line: the client runs it all the same.
pub(crate) fn drop_tool(name: &str, argv: &[Word], stdin: Option<&str>) -> Option<String> {
    let args: Vec<&str> = argv[1..].iter().map(|w| w.text.as_str()).collect();
    let asks = args
        .iter()
        .any(|t| matches!(*t, "--help" | "-?" | "--version" | "-V"));
    match name {
        // dropdb [OPTION]… DBNAME
        "dropdb" if !asks => Some("`dropdb` drops a whole database".into()),
        // mysqladmin [OPTIONS] command …: `drop DB`.
        "mysqladmin" if args.iter().any(|t| t.eq_ignore_ascii_case("drop")) => {
            Some("`mysqladmin drop` drops a whole database".into())
        }
        // redis-cli [OPTIONS] COMMAND …: FLUSHALL / FLUSHDB.
        "redis-cli"
            if redis_command(&args).is_some_and(|t| {
                t.eq_ignore_ascii_case("flushall") || t.eq_ignore_ascii_case("flushdb")
            }) =>
        {
            Some("`redis-cli FLUSHALL/FLUSHDB` deletes every key".into())
        }
        // No command word: redis-cli reads one command per line of stdin.
        "redis-cli"
            if redis_command(&args).is_none()
                && stdin.is_some_and(|s| {
                    s.replace("\\n", "\n").lines().any(|l| {
                        l.split_whitespace().next().is_some_and(|t| {
                            t.eq_ignore_ascii_case("flushall") || t.eq_ignore_ascii_case("flushdb")
                        })
                    })
                }) =>
        {
            Some("FLUSHALL/FLUSHDB piped into `redis-cli` deletes every key".into())
        }
        // mongosh / mongo --eval JS: dropDatabase(), collection.drop().
        "mongosh" | "mongo" => argv[1..]
            .iter()
            .filter(|w| w.text.contains("dropDatabase(") || w.text.contains(".drop("))
            .map(|_| "`dropDatabase()`/`drop()` through mongosh deletes data".to_string())
            .next()
            .or_else(|| {
                stdin
                    .filter(|s| s.contains("dropDatabase(") || s.contains(".drop("))
                    .map(|_| {
                        "`dropDatabase()`/`drop()` piped into mongosh deletes data".to_string()
                    })
            }),
        _ => None,
    }
}

/// redis-cli's command word: the first argument after its options
/// (`-h HOST`, `-p PORT`, `-a PASS`, `-n DB`, … take a value).
fn redis_command<'a>(args: &[&'a str]) -> Option<&'a str> {
    const TAKES: &[&str] = &[
        "-h", "-p", "-a", "-n", "-u", "-s", "-r", "-i", "-d", "--user", "--pass", "--cacert",
        "--cert", "--key", "--sni",
    ];
    let mut k = 0;
    while k < args.len() {
        let t = args[k];
        if TAKES.contains(&t) {
            k += 2;
        } else if t.starts_with('-') {
            k += 1;
        } else {
            return Some(t);
        }
    }
    None
}

pub(super) const INSTEAD_SQL: &str =
    "write a reviewed migration; never drop or truncate data from an agent shell";

/// SQL that deletes data, on a client's command line or stdin, and the
/// tools that drop a database (rule `destroy`).
pub(super) fn verdict(name: &str, argv: &[Word], stdin: Option<&str>, hits: &mut Vec<Hit>) {
    if let Some((c, start)) = client(name, argv) {
        let mut texts = sql_args(c, argv, start);
        texts.extend(stdin.map(str::to_string));
        if let Some(what) = texts.iter().find_map(|s| destructive_sql(s)) {
            hits.push(Hit::new(
                Rule::Destroy,
                format!("{what} through {name} deletes data"),
                INSTEAD_SQL,
            ));
        }
    }
    if let Some(why) = drop_tool(name, argv, stdin) {
        hits.push(Hit::new(Rule::Destroy, why, INSTEAD_SQL));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace().map(Word::lit).collect()
    }

    #[test]
    fn option_grammar_per_client() {
        // (command, SQL it runs)
        let table: &[(&str, &[&str])] = &[
            ("psql -tAc X", &["X"]),
            ("psql -Xc X", &["X"]),
            ("psql -cX", &["X"]),
            ("psql -d -c", &[]),
            ("psql -U -c -c X", &["X"]),
            ("psql --command=X", &["X"]),
            ("mysql -Nse X", &["X"]),
            ("mysql -eX", &["X"]),
            ("mysql -pe -e X", &["X"]),
            ("mysql -p -e X", &["X"]),
            ("mysql -u -e", &[]),
            ("sqlite3 db X Y", &["X", "Y"]),
            ("sqlite3 -cmd X db", &["X"]),
            ("sqlite3 -separator , db", &[]),
            ("clickhouse-client -q X", &["X"]),
            ("clickhouse client --query X", &["X"]),
            ("sqlcmd -S srv -Q X", &["X"]),
            ("cockroach sql -e X", &["X"]),
            ("usql pg://x -c X", &["X"]),
            ("duckdb db -c X", &["X"]),
        ];
        for (cmd, want) in table {
            let argv = words(cmd);
            let name = argv[0].text.clone();
            let (c, start) = client(&name, &argv).expect(cmd);
            assert_eq!(sql_args(c, &argv, start), *want, "{cmd}");
        }
    }

    #[test]
    fn sql_reader() {
        let table: &[(&str, Option<&str>)] = &[
            ("drop table users;", Some("DROP TABLE")),
            ("SELECT 'drop table x'", None),
            ("SELECT \"DROP TABLE\"", None),
            ("-- drop table x\nselect 1", None),
            ("/* drop table x */ select 1", None),
            ("# drop table x\nselect 1", None),
            ("SELECT '--'; DROP TABLE x", Some("DROP TABLE")),
            (
                "DO $$ BEGIN RAISE NOTICE 'x'; END $$; DROP TABLE x;",
                Some("DROP TABLE"),
            ),
            ("SELECT $tag$ DROP TABLE x $tag$", None),
            (
                "-- cleanup\n/* old */\nDROP DATABASE app;",
                Some("DROP DATABASE"),
            ),
            ("truncate logs", Some("TRUNCATE")),
            ("DELETE FROM users;", Some("DELETE without WHERE")),
            ("DELETE FROM users WHERE id = 1;", None),
            ("SELECT 'it''s'; drop schema s", Some("DROP SCHEMA")),
            ("SELECT $1, $2", None),
        ];
        for (sql, want) in table {
            assert_eq!(destructive_sql(sql), *want, "{sql}");
        }
    }
}
