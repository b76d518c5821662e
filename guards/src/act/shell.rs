//! From shell text to the simple commands that would run. tree-sitter-bash
//! gives the syntax tree; this module turns each `command` node into a
//! [`Cmd`] (words with quotes removed, here-doc / here-string input, `<`
//! files), follows data through pipelines ([`Flow`]), and hands every command
//! to the rules the caller supplies ([`Rules`]). Shell text found in a command (`bash -c`, `eval`, a
//! heredoc fed to a shell, `| sh`, `watch`, `env -S`) is parsed again,
//! recursively, up to [`MAX_DEPTH`].

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, Parser};

use super::words::{FRESH_TEMP, is_mktemp};
use super::{ActConfig, Block, Verdict, decode, expand};

/// Shell text nested deeper than this (`bash -c` in `eval` in …) is not
/// followed and the command is refused unchecked. Real commands nest two or
/// three levels; this bounds hostile input.
const MAX_DEPTH: usize = 12;

/// Brackets nested deeper than this are refused unchecked before parsing:
/// no real command nests so deep, and the syntax tree is walked
/// recursively, so this also bounds the stack.
const MAX_NESTING: usize = 200;

/// Time allowed for parsing one command line (all nested shell text
/// included). Real commands parse in microseconds; this bounds hostile input
/// that drives the parser's error recovery super-linear. Past it the command
/// is refused unchecked.
const PARSE_BUDGET: Duration = Duration::from_millis(300);

/// Syntax-tree depth beyond which the command is refused unchecked:
/// `a && b && …` chains nest one level per operator, and the tree is walked
/// recursively (this bounds the stack, including 2 MiB test threads).
const MAX_TREE_DEPTH: usize = 1000;

/// Commands longer than this are refused unchecked: parsing is linear but
/// costs up to ~8 µs and kilobytes of memory per pipeline stage, and no
/// command an agent types is this long (files are written with the Write
/// tool, not megabyte heredocs).
const MAX_COMMAND_BYTES: usize = 512 * 1024;

/// Commands with more `|` characters than this are refused unchecked before
/// parsing. tree-sitter-bash's cost grows with the square of a pipeline's
/// length (measured: 2,000 stages ~160 ms, 20,000 stages ~15 s), and the
/// time goes into one internal step that the parse deadline cannot
/// interrupt. A real command has a handful of stages; a thousand `|` also
/// covers pipes inside quoted text.
const MAX_PIPES: usize = 1000;

/// Times one command line may be repaired and parsed again after
/// tree-sitter-bash misread it (see [`repair_misreading`]): each repair
/// fixes one joined line or one redirection and parses the whole text
/// again, and a real command needs a handful at most. Past this the
/// command is refused unchecked: 32 repairs of such a script take about
/// 14 ms in a debug build, well inside [`PARSE_BUDGET`].
const MAX_REPAIRS: usize = 32;

/// Bytes of loop body a command line may have judged again, once per word
/// of a `for v in WORDS` list (`for c in rm; do $c -rf src; done`: the body
/// once with `c=rm`). Nested loops multiply (32 words in four levels is a
/// million bodies: 1.6 s measured), so past this the command is refused
/// unchecked rather than followed in part, which would let a padded list
/// hide its last word. A real loop costs words × body: 100 files × a
/// 100-byte body is 10 KB; this much is walked in about 20 ms.
const MAX_FOR_BODY_BYTES: usize = 128 * 1024;

/// A word after quote removal. Expansions (`$HOME`, `$(…)`) are kept as
/// written and mark the word dynamic: its runtime value is unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Word {
    pub text: String,
    pub dynamic: bool,
}

impl Word {
    pub fn lit(s: &str) -> Word {
        Word {
            text: s.to_string(),
            dynamic: false,
        }
    }
    /// A word whose value cannot be known (e.g. what `xargs` reads).
    pub fn unknown() -> Word {
        Word {
            text: String::new(),
            dynamic: true,
        }
    }
}

/// One simple command as it would run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cmd {
    /// The command as written (for messages).
    pub span: String,
    pub words: Vec<Word>,
    /// Here-doc body or here-string fed to stdin.
    pub stdin_text: Option<String>,
    /// Files redirected into stdin (`< file`).
    pub in_files: Vec<Word>,
    /// Files stdout is written to (`> file`, `>> file`).
    pub out_files: Vec<Word>,
}

/// What flows out of a pipeline stage into the next one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Flow {
    /// Known text (from `echo`, `printf`, `cat <<EOF`).
    pub text: Option<String>,
    /// The stream carries a secret file's content.
    pub secret: bool,
    /// Paths produced (by `find ROOTS`), for `xargs`.
    pub items: Option<Vec<Word>>,
    /// The stream is decoded bytes (`base64 -d`): unreadable here.
    pub decoded: bool,
}

/// What the analyser does with each simple command that would run: the
/// rules, supplied by the caller ([`super::check`]), so that the parser
/// knows nothing of them.
pub(crate) type Rules = fn(&mut Analyser<'_>, &Cmd, Flow) -> Flow;

pub(crate) struct Analyser<'c> {
    pub cfg: &'c ActConfig,
    /// The rules, called for every simple command that would run.
    rules: Rules,
    parser: Option<Parser>,
    depth: usize,
    /// The working directory as far as it is known (payload cwd, then `cd`).
    pub cwd: Option<String>,
    pub hit: Option<Block>,
    pub unparsed: Option<String>,
    /// Set when the command is too complex to check (refused, fail closed).
    pub unchecked: Option<String>,
    /// Current recursion depth over the syntax tree.
    tree_depth: usize,
    /// When parsing must stop ([`PARSE_BUDGET`] after the check began).
    deadline: Instant,
    /// Shell variables assigned a literal value earlier in the text
    /// (`a=rm; $a -rf x` runs `rm`).
    vars: Vec<(String, String)>,
    /// Heredoc bodies lifted out of text the parser could not read
    /// ([`hoist_heredocs`]), by placeholder number.
    heredocs: Vec<String>,
    /// Files written earlier in the text with known content
    /// (`cat <<'EOF' > s.sh`), so that running them (`bash s.sh`) is
    /// checked like the text itself.
    files: Vec<(String, String)>,
    /// Aliases defined earlier in the text (`alias r='rm -rf'`): they
    /// apply to a command's first word only, as bash expands them.
    pub aliases: Vec<(String, String)>,
    /// Programs copied or linked earlier in the text, by their new path
    /// (`cp /bin/rm ./x` → `./x` is `rm`): a file, so it runs as itself
    /// wherever it is the command, behind `sudo` or `env` too.
    pub copies: Vec<(String, String)>,
    /// Git aliases defined earlier in the text (`git config alias.w …`).
    pub git_aliases: Vec<(String, String)>,
    /// What is left of [`MAX_FOR_BODY_BYTES`] for this command line.
    for_bytes_left: usize,
    /// A command that may create files ran earlier in the line (see
    /// `caches.rs`).
    pub ran_before_rm: bool,
    /// Collecting cache folders instead of blocking on them
    /// ([`super::cache_candidates`]).
    pub collect_caches: bool,
    pub caches: std::cell::RefCell<Vec<String>>,
    /// Files that hold a copy or a derivation of a secret, made earlier in
    /// the text (`cp .env x`, `base64 id_rsa > k`): secrets for the rest
    /// of the line.
    pub secret_copies: Vec<String>,
    /// Arrays with literal elements assigned earlier in the text
    /// (`x=(rm -rf src)`; `set -- …` as `@`).
    arrays: Vec<(String, Vec<String>)>,
}

pub(crate) fn analyse(text: &str, cfg: &ActConfig, rules: Rules) -> Verdict {
    analyse_with(text, cfg, rules, false).0
}

/// The verdict when every cache folder met is assumed vouched for, and
/// those folders.
pub(crate) fn analyse_collecting(
    text: &str,
    cfg: &ActConfig,
    rules: Rules,
) -> (Verdict, Vec<String>) {
    analyse_with(text, cfg, rules, true)
}

fn analyse_with(
    text: &str,
    cfg: &ActConfig,
    rules: Rules,
    collect_caches: bool,
) -> (Verdict, Vec<String>) {
    let mut a = Analyser {
        cfg,
        rules,
        parser: None,
        depth: 0,
        cwd: cfg.cwd.clone(),
        hit: None,
        unparsed: None,
        unchecked: None,
        tree_depth: 0,
        deadline: Instant::now() + PARSE_BUDGET,
        vars: Vec::new(),
        heredocs: Vec::new(),
        files: Vec::new(),
        aliases: Vec::new(),
        copies: Vec::new(),
        git_aliases: Vec::new(),
        for_bytes_left: MAX_FOR_BODY_BYTES,
        ran_before_rm: false,
        collect_caches,
        caches: Default::default(),
        secret_copies: Vec::new(),
        arrays: Vec::new(),
    };
    a.shell(text);
    let caches = a.caches.take();
    let v = match (a.hit, a.unchecked, a.unparsed) {
        (Some(b), _, _) => Verdict::Block(b),
        (None, Some(why), _) => Verdict::Unchecked(why),
        (None, None, Some(why)) => Verdict::Unparsed(why),
        (None, None, None) => Verdict::Allow,
    };
    (v, caches)
}

impl<'c> Analyser<'c> {
    /// Analyse `text` as shell code (one nesting level deeper).
    pub fn shell(&mut self, text: &str) {
        // Blanks before the first word mean nothing to bash, but they move
        // tree-sitter's error recovery on broken input (`  \ && x` parses
        // differently from `\ && x`): the verdict must not depend on them.
        let text = text.trim_start_matches([' ', '\t']);
        if self.hit.is_some() || text.trim().is_empty() {
            return;
        }
        if self.depth >= MAX_DEPTH {
            self.unchecked = Some(format!(
                "shell code nested more than {MAX_DEPTH} levels deep"
            ));
            return;
        }
        if text.len() > MAX_COMMAND_BYTES {
            self.unchecked = Some(format!("it is longer than {MAX_COMMAND_BYTES} bytes"));
            return;
        }
        if text.bytes().filter(|b| *b == b'|').count() > MAX_PIPES {
            self.unchecked = Some(format!("it has more than {MAX_PIPES} `|` characters"));
            return;
        }
        if nesting(text) > MAX_NESTING {
            self.unchecked = Some(format!(
                "brackets nested more than {MAX_NESTING} levels deep"
            ));
            return;
        }
        // Brace expansion and unquoted `$IFS` are decided by the text
        // alone: the expanded text is what runs (`{rm,-rf,src}`).
        let expanded = match expand::prepass(text) {
            Ok(e) => e,
            Err(()) => {
                self.refuse(&expand::too_large());
                return;
            }
        };
        let text = expanded.as_deref().unwrap_or(text);
        let Some((tree, repaired)) = self.parse_repaired(text) else {
            return;
        };
        let text = repaired.as_deref().unwrap_or(text);
        let root = tree.root_node();
        // tree-sitter-bash loses the rest of a line after a heredoc start
        // when `;`, `&` or a redirection plus `|` follows it (`cat <<EOF;
        // rm -rf x`): bash runs that rest, so the heredocs are lifted out as
        // `<` redirects from placeholders and the text is parsed again.
        if root.has_error()
            && text.contains("<<")
            && let Some((hoisted, lifted)) = hoist_heredocs(text, &mut self.heredocs)
        {
            let Some((tree2, repaired)) = self.parse_repaired(&hoisted) else {
                return;
            };
            let hoisted = repaired.unwrap_or(hoisted);
            if tree2.root_node().has_error() {
                self.note_unparsed("the command is not valid shell syntax");
            }
            self.walk_tree(tree2.root_node(), &hoisted);
            // `$(…)` in an unquoted body runs whatever reads the body (one
            // level deeper, so that bodies inside bodies stay bounded).
            self.depth += 1;
            for n in lifted {
                let body = self.heredocs[n].clone();
                if body.contains("$(") || body.contains('`') {
                    self.shell(&format!("cat <<{BODY_END}\n{body}\n{BODY_END}\n"));
                }
            }
            self.depth -= 1;
            return;
        }
        if root.has_error() {
            self.note_unparsed("the command is not valid shell syntax");
        }
        self.walk_tree(root, text);
    }

    fn walk_tree(&mut self, root: Node<'_>, text: &str) {
        self.depth += 1;
        let saved = self.cwd.clone();
        self.walk(root, text);
        self.cwd = saved;
        self.depth -= 1;
    }

    /// Parse `text`, then repair what the grammar misread in a tree it
    /// found no error in ([`repair_misreading`]) and parse again; the
    /// repaired text comes back with the tree when there was one. `None`
    /// (and the reason noted) when no tree comes out or the repairs pass
    /// [`MAX_REPAIRS`].
    fn parse_repaired(&mut self, text: &str) -> Option<(tree_sitter::Tree, Option<String>)> {
        let mut tree = self.parse(text)?;
        let mut repaired: Option<String> = None;
        for round in 0.. {
            if tree.root_node().has_error() {
                break;
            }
            let now = repaired.as_deref().unwrap_or(text);
            let again = match repair_misreading(tree.root_node(), now) {
                None => break,
                Some(Misreading::Repaired(again)) => again,
                Some(Misreading::Unrepairable(why)) => {
                    self.unchecked = Some(format!("the shell parser misread it: {why}"));
                    return None;
                }
            };
            if round == MAX_REPAIRS {
                self.unchecked = Some(format!(
                    "the shell parser misread it more than {MAX_REPAIRS} times"
                ));
                return None;
            }
            tree = self.parse(&again)?;
            repaired = Some(again);
        }
        Some((tree, repaired))
    }

    /// Parse `text`; `None` (and the reason noted) when no tree comes out.
    fn parse(&mut self, text: &str) -> Option<tree_sitter::Tree> {
        let mut parser = match self.parser.take() {
            Some(p) => p,
            None => {
                let mut p = Parser::new();
                if p.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
                    self.note_unparsed("shell grammar unavailable");
                    return None;
                }
                p
            }
        };
        // The grammar's external scanner calls `isdigit` on raw code points
        // (undefined, and a crash, above 255). Parse an ASCII copy with the
        // same byte offsets; every non-ASCII byte becomes a word character,
        // which is what bash makes of it too. Text is read from `text`.
        let ascii: Option<Vec<u8>> = (!text.is_ascii()).then(|| {
            text.bytes()
                .map(|b| if b.is_ascii() { b } else { b'x' })
                .collect()
        });
        let bytes: &[u8] = ascii.as_deref().unwrap_or(text.as_bytes());
        // Error recovery is super-linear on some inputs (a long pipeline
        // ending in `|`): the parse is cancelled at the deadline.
        let deadline = self.deadline;
        let mut out_of_time = false;
        let mut progress = |_: &tree_sitter::ParseState| {
            if Instant::now() >= deadline {
                out_of_time = true;
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let tree = parser.parse_with_options(
            &mut |i, _| bytes.get(i..).unwrap_or(&[]),
            None,
            Some(ParseOptions::new().progress_callback(&mut progress)),
        );
        if tree.is_none() {
            parser.reset();
        }
        self.parser = Some(parser);
        let Some(tree) = tree else {
            if out_of_time {
                self.unchecked = Some(format!(
                    "parsing it took longer than {} ms",
                    PARSE_BUDGET.as_millis()
                ));
            } else {
                self.note_unparsed("the shell parser gave no tree");
            }
            return None;
        };
        Some(tree)
    }

    /// Refuse the command unchecked, saying why.
    pub fn refuse(&mut self, why: &str) {
        if self.unchecked.is_none() {
            self.unchecked = Some(why.to_string());
        }
    }

    /// Note that `path` now holds `content`.
    pub fn remember_file(&mut self, path: &str, content: &str) {
        let key = path.trim_start_matches("./").to_string();
        self.files.retain(|(k, _)| *k != key);
        self.files.push((key, content.to_string()));
    }

    /// What this text wrote to `path` earlier, if known.
    pub fn written(&self, path: &str) -> Option<String> {
        let key = path.trim_start_matches("./");
        self.files
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, c)| c.clone())
    }

    /// The heredoc body a placeholder stands for; other text unchanged.
    fn lifted(&self, t: String) -> String {
        t.strip_prefix(PLACEHOLDER)
            .and_then(|n| n.strip_suffix("__"))
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| self.heredocs.get(n).cloned())
            .unwrap_or(t)
    }

    fn note_unparsed(&mut self, why: &str) {
        if self.unparsed.is_none() {
            self.unparsed = Some(why.to_string());
        }
    }

    pub fn block(&mut self, b: Block) {
        if self.hit.is_none() {
            self.hit = Some(b);
        }
    }

    fn walk(&mut self, node: Node<'_>, src: &str) {
        if self.hit.is_some() || self.unchecked.is_some() {
            return;
        }
        if self.tree_depth >= MAX_TREE_DEPTH {
            self.unchecked = Some(format!(
                "the command nests more than {MAX_TREE_DEPTH} levels deep"
            ));
            return;
        }
        self.tree_depth += 1;
        self.walk_node(node, src);
        self.tree_depth -= 1;
    }

    fn walk_node(&mut self, node: Node<'_>, src: &str) {
        match node.kind() {
            "comment" | "heredoc_start" | "heredoc_end" | "heredoc_content" => {}
            "command" => self.walk_command(node, src),
            "redirected_statement" => {
                self.redirected(node, src, Flow::default());
            }
            "pipeline" => {
                self.pipeline(node, src, Flow::default(), None);
            }
            "subshell" => {
                let saved = self.cwd.clone();
                self.walk_children(node, src);
                self.cwd = saved;
            }
            "for_statement" => {
                if !self.for_each_word(node, src) {
                    self.walk_children(node, src);
                }
            }
            "variable_assignment" => {
                self.assign(node, src);
                self.walk_children(node, src);
            }
            _ => self.walk_children(node, src),
        }
    }

    // The arms of `walk_node` that need locals live in functions of their
    // own, never inlined: `walk_node` recurses once per tree level (up to
    // `MAX_TREE_DEPTH`), so its frame must stay small, test threads' 2 MiB
    // stacks included.

    #[inline(never)]
    fn walk_command(&mut self, node: Node<'_>, src: &str) {
        if self.expanded_command(node, src) {
            return;
        }
        let cmd = build_cmd(node, src, None);
        self.run(&cmd, Flow::default());
        self.walk_inside_command(node, src);
    }

    /// `name=value`: the variable's value from here on.
    #[inline(never)]
    fn assign(&mut self, node: Node<'_>, src: &str) {
        let (Some(n), Some(v)) = (
            node.child_by_field_name("name"),
            node.child_by_field_name("value"),
        ) else {
            return;
        };
        let name = text(n, src).to_string();
        if v.kind() == "array" {
            self.assign_array(&name, v, src, text(node, src).contains("+="));
        }
        let value = word_value(v, src);
        self.vars.retain(|(k, _)| *k != name);
        // Dynamic values stay as written (`$HOME`, `$(…)`), which the rules
        // understand or treat as unknown; a fresh `$(mktemp -d)` is a temp
        // dir.
        let value = if is_mktemp(&value.text) {
            FRESH_TEMP.to_string()
        } else {
            value.text
        };
        self.vars.push((name, value));
    }

    /// `for v in WORDS; do BODY; done` over literal words: the body is
    /// judged once per distinct word with `v` set to it, as bash runs it
    /// (after the loop `v` keeps the last word, as in bash); a body that
    /// never names `v` is judged once. Past [`MAX_FOR_BODY_BYTES`] the
    /// command is refused unchecked. `false` when the list is absent or
    /// dynamic: the loop is then walked as written, `v` unknown.
    #[inline(never)]
    fn for_each_word(&mut self, node: Node<'_>, src: &str) -> bool {
        let (Some(var), Some(body)) = (
            node.child_by_field_name("variable"),
            node.child_by_field_name("body"),
        ) else {
            return false;
        };
        let mut cursor = node.walk();
        let mut words: Vec<String> = Vec::new();
        for v in node.children_by_field_name("value", &mut cursor) {
            let w = word_value(v, src);
            if w.dynamic {
                return false;
            }
            if !words.contains(&w.text) {
                words.push(w.text);
            }
        }
        let Some(last) = words.last().cloned() else {
            return false;
        };
        let name = text(var, src).to_string();
        let body_text = text(body, src);
        if !names_variable(body_text, &name) {
            words = vec![last];
        }
        let cost = words.len().saturating_mul(body_text.len());
        if cost > self.for_bytes_left {
            self.unchecked = Some(format!(
                "its `for` loops would be followed over more than {MAX_FOR_BODY_BYTES} bytes of loop bodies"
            ));
            return true;
        }
        self.for_bytes_left -= cost;
        for w in words {
            self.vars.retain(|(k, _)| *k != name);
            self.vars.push((name.clone(), w));
            self.walk(body, src);
            if self.hit.is_some() || self.unchecked.is_some() {
                break;
            }
        }
        true
    }

    /// `x=(…)` / `x+=(…)`: the array, when every element is literal.
    fn assign_array(&mut self, name: &str, value: Node<'_>, src: &str, append: bool) {
        let mut items = if append {
            self.arrays
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        self.arrays.retain(|(k, _)| k != name);
        let mut cursor = value.walk();
        for el in value.named_children(&mut cursor) {
            if el.kind() == "comment" {
                continue;
            }
            let w = word_value(el, src);
            if w.dynamic {
                return;
            }
            items.push(w.text);
        }
        self.arrays.push((name.to_string(), items));
    }

    /// A command whose words come from known variables split at blanks,
    /// arrays or `set --` parameters (`$c`, `"${x[@]}"`) is analysed as
    /// the words it makes; `set -- WORDS` records them. True when the
    /// command was analysed that way.
    fn expanded_command(&mut self, node: Node<'_>, src: &str) -> bool {
        let values = expand::Values {
            vars: &self.vars,
            arrays: &self.arrays,
        };
        if let Some(t) = expand::rewrite_command(node, src, &values) {
            self.shell(&t);
            return true;
        }
        if !text(node, src).starts_with("set") {
            return false;
        }
        let cmd = build_cmd(node, src, None);
        if cmd.words.first().is_some_and(|w| w.text == "set")
            && cmd.words.get(1).is_some_and(|w| w.text == "--")
        {
            self.arrays.retain(|(k, _)| k != "@");
            if cmd.words.iter().all(|w| !w.dynamic) {
                let items = cmd.words[2..].iter().map(|w| w.text.clone()).collect();
                self.arrays.push(("@".to_string(), items));
            }
        }
        false
    }

    fn walk_children(&mut self, node: Node<'_>, src: &str) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            self.walk(child, src);
        }
    }

    /// Command substitutions and process substitutions inside a command's
    /// words run too.
    fn walk_inside_command(&mut self, node: Node<'_>, src: &str) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "word" | "number" => {}
                _ => self.walk(child, src),
            }
        }
    }

    /// One pipeline stage (or a lone statement) given what flows into it.
    fn stage(&mut self, node: Node<'_>, src: &str, input: Flow, stdin: Option<&str>) -> Flow {
        if self.tree_depth >= MAX_TREE_DEPTH {
            self.walk(node, src); // records the refusal
            return Flow::default();
        }
        self.tree_depth += 1;
        let out = self.stage_node(node, src, input, stdin);
        self.tree_depth -= 1;
        out
    }

    fn stage_node(&mut self, node: Node<'_>, src: &str, input: Flow, stdin: Option<&str>) -> Flow {
        match node.kind() {
            "command" if self.expanded_command(node, src) => Flow::default(),
            "command" => {
                let cmd = build_cmd(node, src, stdin);
                let out = self.run(&cmd, input);
                self.walk_inside_command(node, src);
                out
            }
            "redirected_statement" => self.redirected(node, src, input),
            "pipeline" => self.pipeline(node, src, input, stdin),
            "list" => {
                // `cat <<EOF | sh && x`: the first element receives the input.
                let mut cursor = node.walk();
                let kids: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                let mut out = Flow::default();
                for (i, k) in kids.into_iter().enumerate() {
                    if i == 0 {
                        out = self.stage(k, src, input.clone(), stdin);
                    } else {
                        self.walk(k, src);
                    }
                }
                out
            }
            _ => {
                self.walk(node, src);
                Flow::default()
            }
        }
    }

    fn pipeline(
        &mut self,
        node: Node<'_>,
        src: &str,
        input: Flow,
        last_stdin: Option<&str>,
    ) -> Flow {
        let mut cursor = node.walk();
        let stages: Vec<Node<'_>> = node
            .named_children(&mut cursor)
            .filter(|n| n.kind() != "comment")
            .collect();
        let n = stages.len();
        let mut flow = input;
        for (i, s) in stages.into_iter().enumerate() {
            let stdin = if i + 1 == n { last_stdin } else { None };
            flow = self.stage(s, src, flow, stdin);
            if self.hit.is_some() {
                break;
            }
        }
        flow
    }

    fn redirected(&mut self, node: Node<'_>, src: &str, input: Flow) -> Flow {
        let mut heredoc: Option<String> = None;
        let mut heredoc_nodes = Vec::new();
        let mut continuations = Vec::new();
        let mut extra_in = Vec::new();
        let mut extra_out = Vec::new();
        let mut here_string = None;
        let mut cursor = node.walk();
        for r in node.children_by_field_name("redirect", &mut cursor) {
            match r.kind() {
                "heredoc_redirect" => {
                    let mut c2 = r.walk();
                    for k in r.named_children(&mut c2) {
                        match k.kind() {
                            "heredoc_body" => {
                                heredoc = Some(text(k, src).to_string());
                                heredoc_nodes.push(k);
                            }
                            "file_redirect" => extra_out.extend(output_redirect(k, src)),
                            "heredoc_start" | "heredoc_end" => {}
                            _ => continuations.push(k),
                        }
                    }
                }
                "herestring_redirect" => {
                    if let Some(v) = r.named_child(0) {
                        here_string = Some(word_value(v, src).text);
                    }
                    self.walk_children(r, src);
                }
                "file_redirect" => {
                    if let Some(w) = input_redirect(r, src) {
                        extra_in.push(w);
                    }
                    extra_out.extend(output_redirect(r, src));
                    self.walk_children(r, src);
                }
                _ => self.walk(r, src),
            }
        }
        let stdin = heredoc.or(here_string);
        let out = match node.child_by_field_name("body") {
            Some(body) if body.kind() == "command" && self.expanded_command(body, src) => {
                Flow::default()
            }
            Some(body) if body.kind() == "command" => {
                let mut cmd = build_cmd(body, src, stdin.as_deref());
                cmd.in_files.extend(extra_in);
                cmd.out_files.extend(extra_out);
                let out = self.run(&cmd, input);
                self.walk_inside_command(body, src);
                out
            }
            Some(body) if body.kind() == "pipeline" => {
                self.pipeline(body, src, input, stdin.as_deref())
            }
            // `a && b < f`: the parser hangs `< f` on the list; bash feeds
            // it to the last command.
            Some(body) if body.kind() == "list" && !extra_in.is_empty() => {
                let mut c = body.walk();
                let kids: Vec<Node<'_>> = body.named_children(&mut c).collect();
                for (i, k) in kids.iter().enumerate() {
                    if i + 1 == kids.len() && k.kind() == "command" {
                        let mut cmd = build_cmd(*k, src, None);
                        cmd.in_files.extend(extra_in.iter().cloned());
                        self.run(&cmd, Flow::default());
                        self.walk_inside_command(*k, src);
                    } else {
                        self.walk(*k, src);
                    }
                }
                self.run_redirection_only(node, src, extra_out)
            }
            // A compound command or a bare redirection (`> f`, `{ …; } > f`):
            // the files it writes are still written.
            Some(body) => {
                self.walk(body, src);
                self.run_redirection_only(node, src, extra_out)
            }
            None => self.run_redirection_only(node, src, extra_out),
        };
        // `$(…)` in an unquoted heredoc body runs whatever reads the body.
        for h in heredoc_nodes {
            self.walk_children(h, src);
        }
        for c in continuations {
            if c.kind() == "pipeline" {
                let mut c3 = c.walk();
                let stages: Vec<Node<'_>> = c.named_children(&mut c3).collect();
                let mut flow = out.clone();
                for s in stages {
                    flow = self.stage(s, src, flow, None);
                }
            } else {
                self.walk(c, src);
            }
        }
        out
    }

    /// The output files of a redirection that has no simple command of its
    /// own, as a command without words.
    fn run_redirection_only(&mut self, node: Node<'_>, src: &str, out_files: Vec<Word>) -> Flow {
        if out_files.is_empty() {
            return Flow::default();
        }
        let cmd = Cmd {
            span: text(node, src).to_string(),
            out_files,
            ..Cmd::default()
        };
        self.run(&cmd, Flow::default())
    }

    /// Run one command: wrappers, nested shells, then the rules.
    fn run(&mut self, cmd: &Cmd, input: Flow) -> Flow {
        if self.hit.is_some() {
            return Flow::default();
        }
        // A lifted heredoc is read from a placeholder "file".
        if let Some(pos) = cmd
            .in_files
            .iter()
            .position(|w| w.text.starts_with(PLACEHOLDER))
        {
            let mut c = cmd.clone();
            let w = c.in_files.remove(pos);
            c.stdin_text = Some(self.lifted(w.text));
            return self.run(&c, input);
        }
        if !self.vars.is_empty() && cmd.words.iter().any(|w| w.dynamic) {
            let mut expanded = cmd.clone();
            for w in &mut expanded.words {
                if w.dynamic
                    && let Some(t) = expand_known(&w.text, &self.vars)
                {
                    w.dynamic = t.contains('$') || t.contains('`');
                    w.text = t;
                }
            }
            let rules = self.rules;
            return rules(self, &expanded, input);
        }
        let rules = self.rules;
        rules(self, cmd, input)
    }
}

/// For the heredoc operator at `b[i..]` (`<<` or `<<-`): where its
/// delimiter word starts (after the blanks) and whether the body's leading
/// tabs are stripped (`<<-`).
pub(super) fn heredoc_word(b: &[u8], i: usize) -> (usize, bool) {
    let mut j = i + 2;
    let strip_tabs = b.get(j) == Some(&b'-');
    if strip_tabs {
        j += 1;
    }
    while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
        j += 1;
    }
    (j, strip_tabs)
}

/// What [`repair_misreading`] found.
enum Misreading {
    /// The text with one misreading repaired (same length).
    Repaired(String),
    /// A misreading no change of the text is known to repair: the command is
    /// refused unchecked, with this reason.
    Unrepairable(&'static str),
}

/// Misreadings of tree-sitter-bash (0.25) that hide words bash runs,
/// repaired in the text (same length, so every offset holds); `None` when
/// the tree has none.
///
/// - A line joined to a pipeline of three or more stages when it holds
///   `&&` or `||`: `ls | grep x | head` then `rm -rf ~ && echo ok` on the
///   next line parses `rm -rf ~` as words of `head`
///   (tree-sitter/tree-sitter-bash#347). bash ends a simple command at
///   every newline that is not escaped, so a simple command whose words are
///   apart by one is always this misreading: the first such newline becomes
///   `;`, and that command's comments blanks (a `;` after `# note` would be
///   part of the note).
/// - A redirection that swallows the words after its target: bash gives
///   `>`, `<`, `2>`, `&>`, `>>` exactly one word, and the words after it
///   stay the command's (`rm >/dev/null -rf build` runs `rm -rf build`);
///   the grammar reads them as more targets (tree-sitter/tree-sitter-bash
///   #233). The words move before the redirection.
/// - A backtick substitution inside another, which bash never reads (an
///   inner backtick closes the outer one unless escaped): a substitution
///   opened with a blank on a later line (`` x=`date` `` then `` rm -rf `
///   echo build` ``) is read as one running from the first backtick to the
///   last, and the second line's `rm` loses its target
///   (tree-sitter/tree-sitter-bash#278). Not repaired: refused unchecked.
fn repair_misreading(root: Node<'_>, text: &str) -> Option<Misreading> {
    let b = text.as_bytes();
    // Most commands are one line without a redirection or a backtick:
    // nothing to walk.
    if !b.iter().any(|&c| matches!(c, b'\n' | b'>' | b'<' | b'`')) {
        return None;
    }
    let mut cursor = root.walk();
    // Each node with whether a backtick substitution encloses it.
    let mut stack = vec![(root, false)];
    while let Some((node, in_backticks)) = stack.pop() {
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        let backticks =
            node.kind() == "command_substitution" && node.child(0).is_some_and(|c| c.kind() == "`");
        if backticks && in_backticks {
            return Some(Misreading::Unrepairable(
                "a backtick substitution inside another; `$(…)` in place of backticks reads right",
            ));
        }
        match node.kind() {
            "command" => {
                for pair in children.windows(2) {
                    let gap = pair[0].end_byte()..pair[1].start_byte();
                    let newline = b.get(gap.clone()).and_then(|g| {
                        g.iter()
                            .enumerate()
                            .find(|&(i, &c)| c == b'\n' && !escaped(b, gap.start + i))
                            .map(|(i, _)| gap.start + i)
                    });
                    if let Some(at) = newline {
                        let mut out = b.to_vec();
                        for c in children.iter().filter(|c| c.kind() == "comment") {
                            out[c.byte_range()].fill(b' ');
                        }
                        out[at] = b';';
                        // Only ASCII bytes were replaced, by ASCII bytes.
                        return String::from_utf8(out).ok().map(Misreading::Repaired);
                    }
                }
            }
            "file_redirect" => {
                let targets: Vec<Node<'_>> = node
                    .children_by_field_name("destination", &mut cursor)
                    .collect();
                if let [first, second, .., last] | [first, second @ last] = targets[..] {
                    let redirect = node.start_byte()..first.end_byte();
                    let blank = first.end_byte()..second.start_byte();
                    let words = second.start_byte()..last.end_byte();
                    let mut out = b[..redirect.start].to_vec();
                    if redirect.start == 0 || b[redirect.start - 1].is_ascii_whitespace() {
                        // `rm >/dev/null -rf build` → `rm -rf build >/dev/null`
                        out.extend_from_slice(&b[words.clone()]);
                        out.extend_from_slice(&b[blank]);
                        out.extend_from_slice(&b[redirect]);
                    } else {
                        // `rm {fd}>x -rf build` → `rm {fd} -rf build>x`: the
                        // blank keeps the moved words apart from what was
                        // glued to the redirection.
                        out.extend_from_slice(&b[blank]);
                        out.extend_from_slice(&b[words.clone()]);
                        out.extend_from_slice(&b[redirect]);
                    }
                    out.extend_from_slice(&b[words.end..]);
                    // Whole nodes were moved: every cut is at a char boundary.
                    return String::from_utf8(out).ok().map(Misreading::Repaired);
                }
            }
            _ => {}
        }
        let in_backticks = in_backticks || backticks;
        stack.extend(children.into_iter().map(|c| (c, in_backticks)));
    }
    None
}

/// Whether the byte at `at` follows an odd run of backslashes (a line
/// continuation when it is a newline).
fn escaped(b: &[u8], at: usize) -> bool {
    b[..at].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1
}

/// Prefix of the file name that stands for a lifted heredoc body
/// (`__hoop_heredoc_3__`).
const PLACEHOLDER: &str = "__hoop_heredoc_";

/// Delimiter used to re-read an unquoted lifted body for its `$(…)`.
const BODY_END: &str = "__HOOP_BODY_END__";

/// Rewrite every heredoc (`<<EOF`, `<<-'EOF'`, …) as a `<` redirect from a
/// placeholder word and cut its body out of the text, the way bash reads
/// them: the operator's line runs as written, the bodies follow the line in
/// order. Bodies go to `bodies`; returns the new text and the indexes of the
/// unquoted bodies (their `$(…)` expand), or `None` when there is no heredoc.
fn hoist_heredocs(text: &str, bodies: &mut Vec<String>) -> Option<(String, Vec<usize>)> {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut pending: Vec<(String, bool, usize)> = Vec::new();
    let mut unquoted = Vec::new();
    let (mut sq, mut dq) = (false, false);
    let mut arith = 0usize;
    let first = bodies.len();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if sq {
            out.push(c);
            sq = c != b'\'';
            i += 1;
            continue;
        }
        match c {
            b'\\' => {
                out.extend_from_slice(&b[i..(i + 2).min(b.len())]);
                i += 2;
                continue;
            }
            b'\'' if !dq => sq = true,
            b'"' => dq = !dq,
            b'(' if !dq && b.get(i + 1) == Some(&b'(') => arith += 1,
            b')' if !dq && arith > 0 && b.get(i + 1) == Some(&b')') => arith -= 1,
            b'#' if !dq && (i == 0 || b" \t\n;&|(".contains(&b[i - 1])) => {
                while i < b.len() && b[i] != b'\n' {
                    out.push(b[i]);
                    i += 1;
                }
                continue;
            }
            b'<' if !dq
                && arith == 0
                && b[i..].starts_with(b"<<")
                && !b[i..].starts_with(b"<<<") =>
            {
                let (mut j, strip_tabs) = heredoc_word(b, i);
                let mut delim = Vec::new();
                let mut quoted = false;
                let mut q: Option<u8> = None;
                while j < b.len() {
                    let d = b[j];
                    match q {
                        Some(open) if d == open => q = None,
                        Some(_) => delim.push(d),
                        None if d == b'\'' || d == b'"' => {
                            quoted = true;
                            q = Some(d);
                        }
                        None if d == b'\\' => {
                            quoted = true;
                            j += 1;
                            if let Some(&e) = b.get(j) {
                                delim.push(e);
                            }
                        }
                        None if d.is_ascii_whitespace() || b";&|<>()".contains(&d) => break,
                        None => delim.push(d),
                    }
                    j += 1;
                }
                let n = bodies.len();
                bodies.push(String::new());
                if !quoted {
                    unquoted.push(n);
                }
                pending.push((String::from_utf8_lossy(&delim).into_owned(), strip_tabs, n));
                // A `<` redirect: the grammar accepts it wherever a
                // redirection may stand (a here-string it does not).
                out.extend_from_slice(format!("<{PLACEHOLDER}{n}__").as_bytes());
                i = j;
                continue;
            }
            b'\n' if !pending.is_empty() && !dq => {
                out.push(b'\n');
                i += 1;
                for (delim, strip_tabs, n) in pending.drain(..) {
                    let mut body = String::new();
                    while i < b.len() {
                        let end = b[i..]
                            .iter()
                            .position(|&x| x == b'\n')
                            .map_or(b.len(), |p| i + p);
                        let line = String::from_utf8_lossy(&b[i..end]);
                        i = (end + 1).min(b.len());
                        let cmp = if strip_tabs {
                            line.trim_start_matches('\t')
                        } else {
                            &line
                        };
                        if cmp == delim {
                            break;
                        }
                        body.push_str(&line);
                        body.push('\n');
                    }
                    bodies[n] = body;
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    if bodies.len() == first {
        return None;
    }
    let text = String::from_utf8(out).ok()?;
    Some((text, unquoted))
}

/// The deepest bracket nesting in `text` (quotes not considered: an upper
/// bound).
fn nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Replace `$name` / `${name}` of known variables; `None` if nothing changed.
fn expand_known(t: &str, vars: &[(String, String)]) -> Option<String> {
    let mut out = String::with_capacity(t.len());
    let mut changed = false;
    let mut rest = t;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let (name, len) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        match vars.iter().rev().find(|(k, _)| k == name) {
            Some((_, v)) if len > 0 => {
                out.push_str(v);
                changed = true;
                rest = &after[len..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}

fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.start_byte()..node.end_byte()).unwrap_or("")
}

/// `< file` (and `0< file`): the file read into stdin.
fn input_redirect(r: Node<'_>, src: &str) -> Option<Word> {
    let t = text(r, src);
    let t = t.trim_start_matches(|c: char| c.is_ascii_digit());
    if t.starts_with('<') && !t.starts_with("<<") && !t.starts_with("<&") && !t.starts_with("<>") {
        r.child_by_field_name("destination")
            .map(|d| word_value(d, src))
    } else {
        None
    }
}

/// `> file`, `>> file`, `>| file`, `&> file` (not `>&2`): the file written.
fn output_redirect(r: Node<'_>, src: &str) -> Option<Word> {
    let t = text(r, src);
    let t = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
    if t.starts_with('>') && !t.starts_with(">&") {
        r.child_by_field_name("destination")
            .map(|d| word_value(d, src))
    } else {
        None
    }
}

fn build_cmd(node: Node<'_>, src: &str, stdin: Option<&str>) -> Cmd {
    let mut cmd = Cmd {
        span: text(node, src).to_string(),
        stdin_text: stdin.map(str::to_string),
        ..Cmd::default()
    };
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "variable_assignment" | "comment" => {}
            "command_name" => {
                let inner = child.named_child(0).unwrap_or(child);
                push_split(&mut cmd.words, inner, src);
            }
            "file_redirect" => {
                if let Some(w) = input_redirect(child, src) {
                    cmd.in_files.push(w);
                }
                cmd.out_files.extend(output_redirect(child, src));
            }
            "herestring_redirect" => {
                if let Some(v) = child.named_child(0) {
                    cmd.stdin_text = Some(word_value(v, src).text);
                }
            }
            "heredoc_redirect" => {}
            _ => push_split(&mut cmd.words, child, src),
        }
    }
    cmd
}

/// Push the word(s) of `node`: an unquoted `$(…)` whose output is known
/// is split into words as bash splits it (`$(echo rm -rf x)` runs `rm`).
fn push_split(words: &mut Vec<Word>, node: Node<'_>, src: &str) {
    let w = word_value(node, src);
    if node.kind() == "command_substitution" && !w.dynamic && w.text.contains([' ', '\t', '\n']) {
        words.extend(w.text.split_ascii_whitespace().map(Word::lit));
    } else {
        words.push(w);
    }
}

/// The value of a word-like node after quote removal.
/// Does shell `code` expand the variable `name` (`$name`, `${name…}`)?
/// Conservative: any such text counts, quoted or not.
fn names_variable(code: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices('$').any(|(i, _)| {
        let rest = &code[i + 1..];
        let rest = rest.strip_prefix('{').unwrap_or(rest);
        rest.strip_prefix(name)
            .is_some_and(|after| !after.starts_with(word))
    })
}

pub(crate) fn word_value(node: Node<'_>, src: &str) -> Word {
    let mut w = Word::default();
    append_value(node, src, &mut w);
    w
}

fn append_value(node: Node<'_>, src: &str, w: &mut Word) {
    let t = text(node, src);
    match node.kind() {
        "word" | "number" | "special_variable_name" | "variable_name" => {
            unescape_unquoted(t, &mut w.text)
        }
        "raw_string" => w.text.push_str(strip(t, "'", "'")),
        "ansi_c_string" => ansi_c(strip(t, "$'", "'"), &mut w.text),
        "string" | "translated_string" => {
            // Literal gaps between children are string content too.
            let start = node.start_byte();
            let inner_start = start + if node.kind() == "string" { 1 } else { 2 };
            let inner_end = node.end_byte().saturating_sub(1).max(inner_start);
            let mut pos = inner_start;
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                if child.start_byte() > pos {
                    unescape_dquoted(src.get(pos..child.start_byte()).unwrap_or(""), &mut w.text);
                }
                match child.kind() {
                    "string_content" => unescape_dquoted(text(child, src), &mut w.text),
                    _ => match static_output(child, src) {
                        Some(out) => {
                            w.text.push_str(&out.text);
                            w.dynamic |= out.dynamic;
                        }
                        None => {
                            w.text.push_str(text(child, src));
                            w.dynamic = true;
                        }
                    },
                }
                pos = child.end_byte().max(pos);
            }
            if inner_end > pos {
                unescape_dquoted(src.get(pos..inner_end).unwrap_or(""), &mut w.text);
            }
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let mut pos = node.start_byte();
            for child in node.named_children(&mut cursor) {
                if child.start_byte() > pos {
                    unescape_unquoted(src.get(pos..child.start_byte()).unwrap_or(""), &mut w.text);
                }
                append_value(child, src, w);
                pos = child.end_byte().max(pos);
            }
            if node.end_byte() > pos {
                unescape_unquoted(src.get(pos..node.end_byte()).unwrap_or(""), &mut w.text);
            }
        }
        _ => match static_output(node, src) {
            Some(out) => {
                w.text.push_str(&out.text);
                w.dynamic |= out.dynamic;
            }
            None => {
                w.text.push_str(t);
                w.dynamic = true;
            }
        },
    }
}

/// What a command substitution prints when it can be known without running
/// anything: `$(echo …)` or `$(printf FORMAT …)` (`eval "$(echo rm -rf x)"`
/// runs `rm -rf x`). An expansion among echo's words stays as written
/// (`$(echo rm -rf "$HOME")` prints `rm -rf $HOME`) and makes the output
/// dynamic; anything else is `None` (the word stays dynamic).
fn static_output(node: Node<'_>, src: &str) -> Option<Word> {
    if node.kind() != "command_substitution" {
        return None;
    }
    let mut cursor = node.walk();
    let kids: Vec<Node<'_>> = node
        .named_children(&mut cursor)
        .filter(|k| k.kind() != "comment")
        .collect();
    let [cmd] = kids.as_slice() else { return None };
    if cmd.kind() == "pipeline" {
        // `$(echo cm0g… | base64 -d)`: a literal payload, decoded.
        let mut c2 = cmd.walk();
        let stages: Vec<Node<'_>> = cmd.named_children(&mut c2).collect();
        let [first, second] = stages.as_slice() else {
            return None;
        };
        let printed = printed_by(*first, src)?;
        let argv = command_words(*second, src)?;
        if printed.dynamic
            || !argv
                .first()
                .is_some_and(|n| decode::is_stdin_base64(&n.text, &argv))
        {
            return None;
        }
        let text = decode::base64_text(&printed.text)?;
        return Some(Word {
            text: text.trim_end_matches('\n').to_string(),
            dynamic: false,
        });
    }
    printed_by(*cmd, src)
}

/// The plain words of a simple command (no redirections, assignments or
/// bare expansions), or `None`.
fn command_words(cmd: Node<'_>, src: &str) -> Option<Vec<Word>> {
    if cmd.kind() != "command" {
        return None;
    }
    let mut words = Vec::new();
    let mut cursor = cmd.walk();
    for child in cmd.named_children(&mut cursor) {
        words.push(match child.kind() {
            "command_name" => word_value(child.named_child(0).unwrap_or(child), src),
            "word" | "number" | "raw_string" | "string" | "ansi_c_string" | "concatenation" => {
                word_value(child, src)
            }
            _ => return None,
        });
    }
    Some(words)
}

/// What `echo …` / `printf FMT …` prints, when known from the text.
fn printed_by(cmd: Node<'_>, src: &str) -> Option<Word> {
    if cmd.kind() != "command" {
        return None;
    }
    let mut words = Vec::new();
    let mut dynamic = false;
    let mut cursor = cmd.walk();
    for child in cmd.named_children(&mut cursor) {
        let w = match child.kind() {
            "command_name" => word_value(child.named_child(0).unwrap_or(child), src),
            "word" | "number" | "raw_string" | "string" | "ansi_c_string" | "concatenation" => {
                word_value(child, src)
            }
            _ => return None, // redirections, assignments, expansions
        };
        dynamic |= w.dynamic;
        words.push(w.text);
    }
    let (name, args) = words.split_first()?;
    let printed = match name.as_str() {
        "echo" => echo_output(args),
        // A format or argument not known here is not followed.
        "printf" if !dynamic => printf_output(args)?,
        _ => return None,
    };
    // A command substitution drops trailing newlines.
    Some(Word {
        text: printed.trim_end_matches('\n').to_string(),
        dynamic,
    })
}

/// bash's builtin `echo`: leading `-n` / `-e` / `-E` clusters are options.
fn echo_output(args: &[String]) -> String {
    let mut escapes = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let Some(flags) = a.strip_prefix('-') else {
            break;
        };
        if flags.is_empty() || !flags.chars().all(|c| matches!(c, 'n' | 'e' | 'E')) {
            break;
        }
        for c in flags.chars() {
            escapes = match c {
                'e' => true,
                'E' => false,
                _ => escapes,
            };
        }
        i += 1;
    }
    let joined = args[i..].join(" ");
    if escapes {
        let mut out = String::new();
        ansi_c(&joined, &mut out);
        out
    } else {
        joined
    }
}

/// `printf FORMAT [ARG…]` with `%s`, `%b` and `%%` only (the format is
/// reused while arguments remain, as printf does); other conversions are
/// not followed (`None`).
fn printf_output(args: &[String]) -> Option<String> {
    let (fmt, mut rest) = match args.split_first()? {
        (f, r) if f == "--" => r.split_first()?,
        (f, _) if f.starts_with('-') && f.len() > 1 => return None, // `-v var`
        (f, r) => (f, r),
    };
    let mut format = String::new();
    ansi_c(fmt, &mut format);
    let mut out = String::new();
    loop {
        let mut used = 0;
        let mut it = format.chars().peekable();
        while let Some(c) = it.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match it.next() {
                Some('%') => out.push('%'),
                Some('s') => {
                    out.push_str(rest.get(used).map_or("", String::as_str));
                    used += 1;
                }
                Some('b') => {
                    ansi_c(rest.get(used).map_or("", String::as_str), &mut out);
                    used += 1;
                }
                _ => return None,
            }
        }
        if used == 0 || used >= rest.len() {
            return Some(out);
        }
        rest = &rest[used..];
    }
}

fn strip<'a>(t: &'a str, pre: &str, suf: &str) -> &'a str {
    let t = t.strip_prefix(pre).unwrap_or(t);
    t.strip_suffix(suf).unwrap_or(t)
}

fn unescape_unquoted(t: &str, out: &mut String) {
    let mut it = t.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('\n') | None => {}
                Some(n) => out.push(n),
            }
        } else {
            out.push(c);
        }
    }
}

fn unescape_dquoted(t: &str, out: &mut String) {
    let mut it = t.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.peek() {
                Some('"' | '\\' | '$' | '`') => out.push(it.next().unwrap_or('\\')),
                Some('\n') => {
                    it.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
}

fn ansi_c(t: &str, out: &mut String) {
    let mut it = t.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            // `\xHH` (one or two hex digits) and `\0NNN` / `\NNN` octal.
            Some('x') => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 2
                    && let Some(d) = it.peek().and_then(|c| c.to_digit(16))
                {
                    v = v * 16 + d;
                    it.next();
                    n += 1;
                }
                if n == 0 {
                    out.push_str("\\x");
                } else {
                    out.extend(char::from_u32(v));
                }
            }
            Some(d @ '0'..='7') => {
                let mut v = d.to_digit(8).unwrap_or(0);
                let mut n = if d == '0' { 0 } else { 1 };
                while n < 3
                    && let Some(d) = it.peek().and_then(|c| c.to_digit(8))
                {
                    v = v * 8 + d;
                    it.next();
                    n += 1;
                }
                out.extend(char::from_u32(v));
            }
            Some(o) => out.push(o),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_variable_table() {
        for (code, name, want) in [
            ("do $c -rf src; done", "c", true),
            ("do \"$c\" x; done", "c", true),
            ("do ${c} x; done", "c", true),
            ("do ${c:-rm} x; done", "c", true),
            ("do echo $cc; done", "c", false),
            ("do echo $c_x; done", "c", false),
            ("do echo c; done", "c", false),
            ("do make test; done", "i", false),
            ("do echo $i$j; done", "j", true),
        ] {
            assert_eq!(names_variable(code, name), want, "{code:?} {name}");
        }
    }

    fn words(src: &str) -> Vec<Word> {
        let mut p = Parser::new();
        p.set_language(&tree_sitter_bash::LANGUAGE.into()).unwrap();
        let t = p.parse(src, None).unwrap();
        let cmd = t.root_node().named_child(0).unwrap();
        build_cmd(cmd, src, None).words
    }

    #[test]
    fn quote_removal() {
        let w = words(r#"\rm -r "a b" 'c d' $'e\tf' g\ h "x${HOME}y" "$(ls)" ~/k "it\"s""#);
        let t: Vec<&str> = w.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(
            t,
            vec![
                "rm",
                "-r",
                "a b",
                "c d",
                "e\tf",
                "g h",
                "x${HOME}y",
                "$(ls)",
                "~/k",
                "it\"s"
            ]
        );
        assert!(!w[2].dynamic && w[6].dynamic && w[7].dynamic);
        let w = words(r#"a "pre"'mid'post"#);
        assert_eq!(w[1].text, "premidpost");
    }
}
