//! The wrappers: commands that run another command. One table says, for each
//! wrapper, how it passes on what it runs (an argv after its options and
//! fixed arguments, shell text after a flag, its remaining words joined as
//! shell text, …); [`peel`] reads a command line with it. `env` and `xargs`
//! (which feed data in) live in `exec.rs`, and `find` (which knows its
//! roots) in `mass_delete.rs`.

use super::shell::Word;
use super::words::{GIT_GLOBAL_WITH_VALUE, shell_quote};

/// How a wrapper passes on what it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inner {
    /// The inner argv follows the options and the fixed arguments.
    Argv,
    /// The remaining words, joined, are shell text (`watch 'make test'`).
    Joined,
    /// Each remaining word is shell text on its own (`hyperfine 'a' 'b'`).
    EachShell,
    /// Nothing runs unless a script or argv flag says so (`su`, `nix develop`).
    FlagOnly,
    /// `parallel CMD ::: ITEMS`: CMD is shell text run once per item, `{}`
    /// replaced by the item (appended when absent).
    Parallel,
    /// Keys typed into a shell (`tmux send-keys 'rm -rf x' Enter`).
    Keys,
    /// Runs the argv after an exec flag once per match (`fd -x rm {}`), the
    /// match (an unknown path) in place of `{}` or appended.
    Exec,
}

/// One wrapper.
pub(crate) struct Wrapper {
    /// The command name and the subcommand words that make it a wrapper.
    pub path: &'static [&'static str],
    /// Options that take a value (`-u USER`; also `-uUSER`, `--user=USER`).
    pub takes: &'static [&'static str],
    /// Options whose value is shell text, wherever they stand (`su -c`).
    pub script: &'static [&'static str],
    /// Options after which the rest of the line is the inner argv
    /// (`nix develop -c`, `fd -x`; `{}` there is an unknown path).
    pub argv_after: &'static [&'static str],
    /// Options meaning nothing is run (`command -v`).
    pub inert: &'static [&'static str],
    /// Fixed arguments before the inner command (a container, a duration).
    pub positionals: usize,
    pub inner: Inner,
}

const fn w(path: &'static [&'static str], inner: Inner) -> Wrapper {
    Wrapper {
        path,
        takes: &[],
        script: &[],
        argv_after: &[],
        inert: &[],
        positionals: 0,
        inner,
    }
}

const fn takes(mut x: Wrapper, t: &'static [&'static str]) -> Wrapper {
    x.takes = t;
    x
}
const fn script(mut x: Wrapper, s: &'static [&'static str]) -> Wrapper {
    x.script = s;
    x
}
const fn argv_after(mut x: Wrapper, s: &'static [&'static str]) -> Wrapper {
    x.argv_after = s;
    x
}
const fn inert(mut x: Wrapper, s: &'static [&'static str]) -> Wrapper {
    x.inert = s;
    x
}
const fn fixed(mut x: Wrapper, n: usize) -> Wrapper {
    x.positionals = n;
    x
}

use Inner::*;

const DOCKER_EXEC_TAKES: &[&str] = &[
    "-e",
    "--env",
    "--env-file",
    "-u",
    "--user",
    "-w",
    "--workdir",
    "--detach-keys",
    "--index",
];
const DOCKER_RUN_TAKES: &[&str] = &[
    "-e",
    "--env",
    "--env-file",
    "-u",
    "--user",
    "-w",
    "--workdir",
    "-v",
    "--volume",
    "--mount",
    "-p",
    "--publish",
    "--name",
    "--network",
    "--net",
    "--entrypoint",
    "-l",
    "--label",
    "--platform",
    "-h",
    "--hostname",
    "--add-host",
    "--cpus",
    "-m",
    "--memory",
    "--restart",
    "--pull",
    "--user",
    "--gpus",
    "--device",
    "--cap-add",
    "--cap-drop",
    "--security-opt",
    "--tmpfs",
    "--ulimit",
    "--log-driver",
    "--log-opt",
    "--shm-size",
    "--dns",
    "--ipc",
    "--pid",
    "--runtime",
    "--service-ports",
];
const KUBECTL_TAKES: &[&str] = &[
    "-c",
    "--container",
    "-n",
    "--namespace",
    "--context",
    "--cluster",
    "--kubeconfig",
    "-f",
    "--filename",
    "--pod-running-timeout",
    "-s",
    "--server",
    "--user",
    "--as",
];
const TMUX_TAKES: &[&str] = &[
    "-s", "-n", "-c", "-t", "-x", "-y", "-e", "-F", "-f", "-l", "-L", "-S", "-w",
];
const FD_TAKES: &[&str] = &[
    "-e",
    "--extension",
    "-t",
    "--type",
    "-d",
    "--max-depth",
    "--min-depth",
    "-E",
    "--exclude",
    "-S",
    "--size",
    "-j",
    "--threads",
    "-c",
    "--color",
    "--changed-within",
    "--changed-before",
    "-o",
    "--owner",
    "--base-directory",
    "--search-path",
    "--ignore-file",
    "--max-results",
];

/// Every wrapper, longest path first within a command name. The comment on
/// each entry says how it passes on what it runs.
pub(crate) static WRAPPERS: &[Wrapper] = &[
    // sudo [opts] argv; `-l`/`-v`/`-k` only list or refresh credentials.
    inert(
        takes(
            w(&["sudo"], Argv),
            &[
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-T",
                "-U",
                "--user",
                "--group",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--close-from",
                "--command-timeout",
            ],
        ),
        &["-l", "--list", "-v", "--validate", "-k", "-K"],
    ),
    // doas [-u user] argv
    takes(w(&["doas"], Argv), &["-u", "-C"]),
    // su [-] [user] -c 'shell text'; without -c an interactive shell.
    script(
        takes(
            w(&["su"], FlagOnly),
            &["-s", "--shell", "-g", "--group", "-G"],
        ),
        &["-c", "--command", "--session-command"],
    ),
    // runuser -u user -- argv, or runuser user -c 'shell text'
    script(
        takes(
            w(&["runuser"], Argv),
            &["-u", "--user", "-g", "--group", "-G", "-s", "--shell"],
        ),
        &["-c", "--command", "--session-command"],
    ),
    // sg group -c 'shell text'
    script(fixed(w(&["sg"], FlagOnly), 1), &["-c"]),
    // gosu / su-exec USER argv
    fixed(w(&["gosu"], Argv), 1),
    fixed(w(&["su-exec"], Argv), 1),
    // pkexec [--user u] argv
    takes(w(&["pkexec"], Argv), &["--user"]),
    // command [-p] argv; `command -v/-V` only describes.
    inert(w(&["command"], Argv), &["-v", "-V"]),
    // builtin argv
    w(&["builtin"], Argv),
    // exec [-a name] argv
    takes(w(&["exec"], Argv), &["-a"]),
    // time [-p] argv, or a `{ …; }` group
    takes(w(&["time"], Argv), &["-f", "-o", "--format", "--output"]),
    // coproc argv
    w(&["coproc"], Argv),
    // nohup / setsid / unbuffer / chronic / catchsegv / eatmydata / fakeroot /
    // dbus-run-session / torsocks argv
    w(&["nohup"], Argv),
    w(&["setsid"], Argv),
    w(&["unbuffer"], Argv),
    w(&["chronic"], Argv),
    w(&["catchsegv"], Argv),
    w(&["eatmydata"], Argv),
    w(&["fakeroot"], Argv),
    w(&["dbus-run-session"], Argv),
    w(&["torsocks"], Argv),
    // busybox APPLET args: the applet is the inner command.
    w(&["busybox"], Argv),
    // proxychains [-f conf] argv
    takes(w(&["proxychains"], Argv), &["-f"]),
    takes(w(&["proxychains4"], Argv), &["-f"]),
    // nice [-n N] argv
    takes(w(&["nice"], Argv), &["-n", "--adjustment"]),
    // ionice [-c class] [-n level] argv
    takes(w(&["ionice"], Argv), &["-c", "-n", "-p", "-P", "-u"]),
    // stdbuf -oL argv
    takes(w(&["stdbuf"], Argv), &["-i", "-o", "-e"]),
    // caffeinate [-t secs] argv
    takes(w(&["caffeinate"], Argv), &["-t", "-w"]),
    // timeout [opts] DURATION argv
    fixed(
        takes(
            w(&["timeout"], Argv),
            &["-s", "--signal", "-k", "--kill-after"],
        ),
        1,
    ),
    // taskset MASK argv (with -c the mask is a CPU list: still one word)
    fixed(w(&["taskset"], Argv), 1),
    // chrt PRIORITY argv
    fixed(w(&["chrt"], Argv), 1),
    // faketime TIMESTAMP argv
    fixed(w(&["faketime"], Argv), 1),
    // chroot [opts] DIR argv
    fixed(takes(w(&["chroot"], Argv), &["--userspec", "--groups"]), 1),
    // flock [opts] FILE argv, or flock FILE -c 'shell text'
    script(
        fixed(
            takes(
                w(&["flock"], Argv),
                &["-w", "--timeout", "-E", "--conflict-exit-code"],
            ),
            1,
        ),
        &["-c", "--command"],
    ),
    // strace / ltrace / valgrind [opts] argv
    takes(w(&["strace"], Argv), &["-o", "-e", "-p", "-s", "-u", "-P"]),
    takes(w(&["ltrace"], Argv), &["-o", "-e", "-p", "-s", "-u"]),
    w(&["valgrind"], Argv),
    // gdb --args argv
    argv_after(w(&["gdb"], FlagOnly), &["--args"]),
    // firejail [opts] argv
    w(&["firejail"], Argv),
    // xvfb-run [opts] argv
    takes(
        w(&["xvfb-run"], Argv),
        &[
            "-n",
            "--server-num",
            "-s",
            "--server-args",
            "-f",
            "--auth-file",
            "-e",
            "--error-file",
        ],
    ),
    // systemd-run [opts] argv
    takes(
        w(&["systemd-run"], Argv),
        &[
            "-u",
            "--unit",
            "-p",
            "--property",
            "-E",
            "--setenv",
            "--uid",
            "--gid",
            "--working-directory",
            "-M",
            "--machine",
            "--description",
            "--slice",
        ],
    ),
    // git [-C DIR] submodule foreach [--recursive] shell text…: the text
    // runs in every submodule (a `clean -fdx` there is one everywhere).
    takes(
        w(&["git", "submodule", "foreach"], Joined),
        GIT_GLOBAL_WITH_VALUE,
    ),
    // ip netns exec NAME argv
    fixed(w(&["ip", "netns", "exec"], Argv), 1),
    // script -c 'shell text' [logfile]
    script(w(&["script"], FlagOnly), &["-c", "--command"]),
    // watch [opts] shell text…; with -x/--exec the words are an argv.
    argv_after(
        takes(
            w(&["watch"], Joined),
            &["-n", "--interval", "-q", "--equexit"],
        ),
        &["-x", "--exec"],
    ),
    // entr [opts] argv (re-run on file change)
    w(&["entr"], Argv),
    // hyperfine 'shell' 'shell' …, plus --prepare/--cleanup shell text
    script(
        takes(
            w(&["hyperfine"], EachShell),
            &[
                "-w",
                "--warmup",
                "-r",
                "--runs",
                "-m",
                "--min-runs",
                "-M",
                "--max-runs",
                "-n",
                "--command-name",
                "--export-json",
                "--export-markdown",
                "--export-csv",
                "-S",
                "--shell",
                "-L",
                "--parameter-list",
                "-P",
                "--parameter-scan",
                "-u",
                "--time-unit",
                "--style",
                "--output",
            ],
        ),
        &[
            "-p",
            "--prepare",
            "-c",
            "--cleanup",
            "-s",
            "--setup",
            "--conclude",
        ],
    ),
    // parallel [opts] CMD ::: items (CMD is shell text, `{}` per item)
    takes(
        w(&["parallel"], Parallel),
        &[
            "-j",
            "--jobs",
            "-S",
            "--sshlogin",
            "--joblog",
            "--results",
            "--delay",
            "--timeout",
            "-d",
            "--delimiter",
        ],
    ),
    // fd / fdfind PATTERN -x argv (per match) / -X argv (all matches)
    argv_after(
        takes(w(&["fd"], Exec), FD_TAKES),
        &["-x", "--exec", "-X", "--exec-batch"],
    ),
    argv_after(
        takes(w(&["fdfind"], Exec), FD_TAKES),
        &["-x", "--exec", "-X", "--exec-batch"],
    ),
    // tmux new-session / new-window / split-window / respawn-pane [opts] shell text
    takes(w(&["tmux", "new-session"], Joined), TMUX_TAKES),
    takes(w(&["tmux", "new"], Joined), TMUX_TAKES),
    takes(w(&["tmux", "new-window"], Joined), TMUX_TAKES),
    takes(w(&["tmux", "neww"], Joined), TMUX_TAKES),
    takes(w(&["tmux", "split-window"], Joined), TMUX_TAKES),
    takes(w(&["tmux", "splitw"], Joined), TMUX_TAKES),
    takes(w(&["tmux", "respawn-pane"], Joined), TMUX_TAKES),
    takes(w(&["tmux", "run-shell"], Joined), TMUX_TAKES),
    takes(w(&["tmux", "run"], Joined), TMUX_TAKES),
    // tmux send-keys -t pane 'keys' Enter: typed into a shell.
    takes(w(&["tmux", "send-keys"], Keys), &["-t", "-N"]),
    takes(w(&["tmux", "send"], Keys), &["-t", "-N"]),
    // screen -dmS name argv
    takes(
        w(&["screen"], Argv),
        &[
            "-S", "-c", "-e", "-h", "-p", "-t", "-T", "-L", "-Logfile", "-X",
        ],
    ),
    // nix develop / nix shell … -c argv; nix-shell --run 'shell text'
    argv_after(
        takes(
            w(&["nix", "develop"], FlagOnly),
            &["-f", "--file", "--profile", "--arg", "--argstr"],
        ),
        &["-c", "--command"],
    ),
    argv_after(
        takes(
            w(&["nix", "shell"], FlagOnly),
            &["-f", "--file", "--arg", "--argstr"],
        ),
        &["-c", "--command"],
    ),
    script(
        takes(
            w(&["nix-shell"], FlagOnly),
            &[
                "-p",
                "--packages",
                "-A",
                "--attr",
                "-I",
                "--arg",
                "--argstr",
            ],
        ),
        &["--run", "--command"],
    ),
    // docker / podman exec [opts] CONTAINER argv
    fixed(takes(w(&["docker", "exec"], Argv), DOCKER_EXEC_TAKES), 1),
    fixed(
        takes(w(&["docker", "container", "exec"], Argv), DOCKER_EXEC_TAKES),
        1,
    ),
    fixed(takes(w(&["podman", "exec"], Argv), DOCKER_EXEC_TAKES), 1),
    fixed(takes(w(&["nerdctl", "exec"], Argv), DOCKER_EXEC_TAKES), 1),
    // docker compose exec / run [opts] SERVICE argv
    fixed(
        takes(w(&["docker", "compose", "exec"], Argv), DOCKER_EXEC_TAKES),
        1,
    ),
    fixed(
        takes(w(&["docker-compose", "exec"], Argv), DOCKER_EXEC_TAKES),
        1,
    ),
    fixed(
        takes(w(&["podman-compose", "exec"], Argv), DOCKER_EXEC_TAKES),
        1,
    ),
    fixed(
        takes(w(&["docker", "compose", "run"], Argv), DOCKER_RUN_TAKES),
        1,
    ),
    fixed(
        takes(w(&["docker-compose", "run"], Argv), DOCKER_RUN_TAKES),
        1,
    ),
    // docker / podman run [opts] IMAGE argv
    fixed(takes(w(&["docker", "run"], Argv), DOCKER_RUN_TAKES), 1),
    fixed(
        takes(w(&["docker", "container", "run"], Argv), DOCKER_RUN_TAKES),
        1,
    ),
    fixed(takes(w(&["podman", "run"], Argv), DOCKER_RUN_TAKES), 1),
    // kubectl / oc exec [opts] POD -- argv
    fixed(takes(w(&["kubectl", "exec"], Argv), KUBECTL_TAKES), 1),
    fixed(takes(w(&["oc", "exec"], Argv), KUBECTL_TAKES), 1),
    // lxc exec INSTANCE -- argv
    fixed(
        takes(w(&["lxc", "exec"], Argv), &["--env", "--user", "--cwd"]),
        1,
    ),
    // fvm flutter … / fvm dart …: the Flutter version manager passes argv on;
    // fvm exec argv; fvm spawn VERSION argv.
    fixed(w(&["fvm", "spawn"], Argv), 1),
    w(&["fvm", "exec"], Argv),
    w(&["fvm"], Argv),
    // bundle exec / rbenv exec / pyenv exec / asdf exec argv
    w(&["bundle", "exec"], Argv),
    w(&["bundler", "exec"], Argv),
    w(&["rbenv", "exec"], Argv),
    w(&["pyenv", "exec"], Argv),
    w(&["asdf", "exec"], Argv),
    // mise exec TOOLS… -- argv
    argv_after(w(&["mise", "exec"], FlagOnly), &["--"]),
    argv_after(w(&["mise", "x"], FlagOnly), &["--"]),
    // direnv exec DIR argv
    fixed(w(&["direnv", "exec"], Argv), 1),
    // npx / bunx / pnpm exec / pnpm dlx / yarn exec / yarn dlx / npm exec argv
    takes(w(&["npx"], Argv), &["-p", "--package", "-c", "--call"]),
    w(&["bunx"], Argv),
    w(&["pnpm", "exec"], Argv),
    w(&["pnpm", "dlx"], Argv),
    w(&["yarn", "exec"], Argv),
    w(&["yarn", "dlx"], Argv),
    takes(
        w(&["npm", "exec"], Argv),
        &["-p", "--package", "-c", "--call"],
    ),
    // uv run / uvx / poetry run / pipenv run / pdm run / hatch run argv
    takes(
        w(&["uv", "run"], Argv),
        &[
            "--with",
            "-p",
            "--python",
            "--project",
            "--directory",
            "--group",
            "--extra",
            "--env-file",
        ],
    ),
    takes(w(&["uvx"], Argv), &["--with", "-p", "--python", "--from"]),
    w(&["poetry", "run"], Argv),
    w(&["pipenv", "run"], Argv),
    w(&["pdm", "run"], Argv),
    w(&["hatch", "run"], Argv),
    // conda / micromamba / mamba run -n ENV argv
    takes(
        w(&["conda", "run"], Argv),
        &["-n", "--name", "-p", "--prefix", "--cwd"],
    ),
    takes(
        w(&["mamba", "run"], Argv),
        &["-n", "--name", "-p", "--prefix", "--cwd"],
    ),
    takes(
        w(&["micromamba", "run"], Argv),
        &["-n", "--name", "-p", "--prefix", "--cwd"],
    ),
    // op run / doppler run [opts] -- argv; aws-vault exec PROFILE -- argv
    takes(w(&["op", "run"], Argv), &["--env-file"]),
    takes(
        w(&["doppler", "run"], Argv),
        &["-p", "--project", "-c", "--config"],
    ),
    fixed(w(&["aws-vault", "exec"], Argv), 1),
    // dotenv [-e file] -- argv
    takes(w(&["dotenv"], Argv), &["-e", "-c", "-v"]),
];

/// What a wrapper runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Peeled {
    /// Not a wrapper.
    No,
    /// Nothing runs (`su` without -c, `command -v rm`).
    Nothing,
    /// The inner argv starts at this index of the words given.
    At(usize),
    /// A rewritten inner argv (`{}` replaced).
    Argv(Vec<Word>),
    /// Shell text, each run as its own script.
    Shell(Vec<String>),
}

/// Is `t` the option `opt` or an option of `opts` with its value attached
/// (`--user=x`, `-ux`)? Returns the option matched and whether the value is
/// attached.
fn match_opt<'a>(t: &str, opts: &[&'a str]) -> Option<(&'a str, Option<String>)> {
    for &o in opts {
        if t == o {
            return Some((o, None));
        }
        if o.starts_with("--") {
            if let Some(v) = t.strip_prefix(o).and_then(|r| r.strip_prefix('=')) {
                return Some((o, Some(v.to_string())));
            }
        } else if o.len() == 2 && !t.starts_with("--") && t.starts_with('-') && t.len() > 2 {
            // A short cluster: `-dmS name`, `-uapp`. The first flag taking
            // a value ends the cluster; what follows it is the value.
            let oc = o.as_bytes()[1];
            if let Some(k) = t.bytes().skip(1).position(|c| c == oc)
                && t.bytes().skip(1).take(k).all(|c| c.is_ascii_alphabetic())
            {
                let rest = &t[k + 2..];
                return Some((o, (!rest.is_empty()).then(|| rest.to_string())));
            }
        }
    }
    None
}

/// Read `words` (the command name first) with the wrapper table.
pub(crate) fn peel(words: &[Word], base: &str) -> Peeled {
    let mut best: Option<(&Wrapper, usize)> = None;
    for wr in WRAPPERS.iter().filter(|wr| wr.path[0] == base) {
        // Match the subcommand words, skipping options between them.
        let mut i = 1;
        let mut ok = true;
        for want in &wr.path[1..] {
            while i < words.len() && words[i].text.starts_with('-') {
                i += if match_opt(&words[i].text, wr.takes).is_some_and(|(_, v)| v.is_none()) {
                    2
                } else {
                    1
                };
            }
            if words.get(i).map(|w| w.text.as_str()) == Some(*want) {
                i += 1;
            } else {
                ok = false;
                break;
            }
        }
        if ok && best.is_none_or(|(b, _)| wr.path.len() > b.path.len()) {
            best = Some((wr, i));
        }
    }
    let Some((wr, mut i)) = best else {
        return Peeled::No;
    };
    // Script options anywhere (before `--`) win: `su app -c '…'`.
    let mut scripts = Vec::new();
    let mut k = i;
    while k < words.len() && words[k].text != "--" {
        if let Some((_, v)) = match_opt(&words[k].text, wr.script) {
            match v {
                Some(v) => scripts.push(v),
                None => scripts.extend(words.get(k + 1).map(|w| w.text.clone())),
            }
            k += 1;
        }
        k += 1;
    }
    if !scripts.is_empty() && wr.inner != EachShell {
        return Peeled::Shell(scripts);
    }
    let mut positionals = wr.positionals;
    while i < words.len() {
        let t = words[i].text.as_str();
        if t == "--" {
            i += 1;
            if wr.argv_after.contains(&"--") {
                return Peeled::At(i);
            }
            // Whatever follows is positional.
            i += positionals.min(words.len() - i);
            break;
        }
        if t.starts_with('-') && t.len() > 1 {
            if wr.inert.contains(&t) {
                return Peeled::Nothing;
            }
            if wr.argv_after.contains(&t) {
                let inner = &words[i + 1..];
                let end = inner
                    .iter()
                    .position(|w| matches!(w.text.as_str(), ";" | "\\;"))
                    .unwrap_or(inner.len());
                let inner = &inner[..end];
                let unknown = inner.iter().any(|w| w.text.contains("{}"));
                let mut argv: Vec<Word> = inner
                    .iter()
                    .map(|w| {
                        if w.text.contains("{}") {
                            Word::unknown()
                        } else {
                            w.clone()
                        }
                    })
                    .collect();
                if !unknown && wr.inner == Exec {
                    argv.push(Word::unknown());
                }
                return Peeled::Argv(argv);
            }
            i += match match_opt(t, wr.takes) {
                Some((_, None)) => 2,
                _ => 1,
            };
            continue;
        }
        if positionals == 0 {
            if matches!(wr.inner, FlagOnly | Exec) {
                // Only a flag runs anything: it may follow any argument
                // (`nix shell nixpkgs#x -c …`, `fd PATTERN -x …`).
                i += 1;
                continue;
            }
            break;
        }
        positionals -= 1;
        i += 1;
    }
    // `i` is where the inner command starts.
    let rest = &words[i.min(words.len())..];
    match wr.inner {
        FlagOnly | Exec => Peeled::Nothing,
        Argv => {
            // `time { rm -rf x; }` reaches us as the words `{ rm -rf x`.
            if rest.first().is_some_and(|w| w.text == "{" || w.text == "(") {
                Peeled::Shell(vec![join_quoted(&rest[1..])])
            } else {
                Peeled::At(i)
            }
        }
        Joined => Peeled::Shell(vec![join_plain(rest)]),
        EachShell => {
            let mut all = scripts;
            all.extend(rest.iter().map(|w| w.text.clone()));
            Peeled::Shell(all)
        }
        Keys => {
            let typed: Vec<String> = rest
                .iter()
                .map(|w| match w.text.as_str() {
                    "Enter" | "C-m" | "KPEnter" | "C-j" | "C-c" => "\n".to_string(),
                    t => t.to_string(),
                })
                .collect();
            Peeled::Shell(vec![typed.join(" ")])
        }
        Parallel => {
            let sep = rest
                .iter()
                .position(|w| w.text.starts_with(":::"))
                .unwrap_or(rest.len());
            let cmd = join_plain(&rest[..sep]);
            let items: Vec<String> = rest
                .get(sep + 1..)
                .unwrap_or(&[])
                .iter()
                .filter(|w| !w.text.starts_with(":::"))
                .map(|w| w.text.clone())
                .collect();
            if cmd.trim().is_empty() {
                // No command: each item is a command line.
                return Peeled::Shell(items);
            }
            if items.is_empty() {
                // Items from stdin: unknown values.
                let unknown = "\"$HOOP_UNKNOWN\"";
                return Peeled::Shell(vec![if cmd.contains("{}") {
                    cmd.replace("{}", unknown)
                } else {
                    format!("{cmd} {unknown}")
                }]);
            }
            Peeled::Shell(
                items
                    .iter()
                    .map(|it| {
                        let it = shell_quote(it);
                        if cmd.contains("{}") {
                            cmd.replace("{}", &it)
                        } else {
                            format!("{cmd} {it}")
                        }
                    })
                    .collect(),
            )
        }
    }
}

/// Words joined as they come (the wrapper itself joins them for a shell).
fn join_plain(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Words quoted back into shell text.
fn join_quoted(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| {
            if w.dynamic {
                w.text.clone()
            } else {
                shell_quote(&w.text)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
