//! The persistent shell inside a sandbox: how a command is written to bash
//! and how its end is recognised.
//!
//! The shell is an interactive bash (no terminal, no line editing, no
//! history): an interrupt aborts the command line it runs and brings it
//! back to its prompt, as Ctrl+C does in a terminal, so its functions,
//! aliases, variables and options outlive an interrupt or a timeout.
//!
//! Each command is a file of its own that the shell sources (so `cd`,
//! `export`, functions and aliases persist), with stdin from `/dev/null`
//! and stdout and stderr sent to two FIFOs made for that command alone:
//! output a background job writes later goes to its own command's FIFOs,
//! never into another command's result. Afterwards bash prints a sentinel
//! carrying a random nonce and the exit status on its own stdout, which
//! only we read; and before each prompt, a prompt mark saying whether the
//! stop signal ended what ran.

use std::collections::BTreeMap;

/// Where the per-command FIFOs live inside the sandbox.
pub const FIFO_DIR: &str = "/tmp/.duet";

/// Where the shell keeps, after each command that finished, its working
/// directory and exported variables, as a script a replacement shell
/// sources: a shell that did not stop when told to is replaced, and these
/// persist.
pub const STATE_FILE: &str = "/tmp/.duet/state";

/// Where the shell keeps, beside the state, its working directory as is
/// (`$PWD`, unquoted): where the next command runs.
pub const CWD_FILE: &str = "/tmp/.duet/cwd";

/// What the shell runs after each command, and at the prompt after it was
/// stopped: it saves its directory and exports (`STATE_FILE`, `CWD_FILE`).
/// Our files are written with `>|`: a person's `set -o noclobber` holds
/// for theirs.
fn save_state() -> String {
    format!(
        "{{ builtin export -p; builtin printf 'cd -- %q\\n' \"$PWD\"; }} 2>/dev/null >|{STATE_FILE}; \
         builtin printf %s \"$PWD\" 2>/dev/null >|{CWD_FILE}"
    )
}

/// The first line a replacement shell reads: back to the last finished
/// command's directory and exports.
pub fn restore_line() -> String {
    format!(". {STATE_FILE} 2>/dev/null\n")
}

/// How bash is started: interactive (an interrupt aborts its command line
/// instead of ending it), without a terminal's line editing, history or
/// `!` expansion, and without any profile or rc file.
pub const SHELL_ARGS: [&str; 7] = [
    "--noprofile",
    "--norc",
    "--noediting",
    "-i",
    "+H",
    "+o",
    "history",
];

/// The signal that stops what the shell runs: its trap (armed again before
/// every prompt) raises SIGINT in the shell itself once the running program
/// has ended, which aborts the command line however that program ended.
/// SIGURG is ignored by default: a shell whose trap a command removed
/// ignores it too, and is replaced after a grace.
pub const STOP_SIGNAL: i32 = libc::SIGURG;

/// The file holding the command the shell runs (one at a time), which it
/// sources.
pub const COMMAND_FILE: &str = "/tmp/.duet/command";

/// What the command's file holds: a first line that empties the file (bash
/// has read it whole by then, and the text does not lie around in `/tmp`
/// while it runs), then the command.
pub fn command_text(cmd: &str) -> String {
    format!("builtin : 2>/dev/null >|{COMMAND_FILE}\n{cmd}")
}

/// Where the stop signal's trap keeps a SIGINT trap of the person's while
/// it raises its own SIGINT; the next prompt puts it back.
pub const INT_TRAP_FILE: &str = "/tmp/.duet/int-trap";

/// The first line every shell reads: no prompts, no history file, and the
/// prompt mark (`\x1eP<stopped>\x1e`: `1` once the stop signal's trap ran
/// since the last mark) printed before each prompt, where the stop
/// signal's trap is armed again. Only builtins: no fork per command.
pub fn setup_line() -> String {
    format!(
        "PS1= PS2= PS0=; unset HISTFILE MAILCHECK; \
         __duet_prompt() {{ \
         if [[ -n ${{__duet_stopped-}} ]]; then builtin . {INT_TRAP_FILE} 2>/dev/null; {save}; fi; \
         builtin printf '\\036P%s\\036\\n' \"${{__duet_stopped-}}\"; __duet_stopped=; \
         builtin trap '__duet_stopped=1; builtin trap -p INT 2>/dev/null >|{INT_TRAP_FILE}; \
         builtin trap - INT; builtin kill -INT $$' URG; }}; \
         PROMPT_COMMAND=__duet_prompt\n",
        save = save_state()
    )
}

/// Between fork and exec of a room's program (its shell, terminal or
/// background process): every signal back to its default action. A backend
/// started with SIGINT or SIGHUP ignored (`duet serve &` in a script,
/// `nohup`) would pass that on, and then an interrupt could neither stop a
/// command nor abort the shell's line, and a person's `trap ... INT` would
/// not hold. Only signal(2), which is async-signal-safe.
pub fn default_signals() {
    for signal in 1..32 {
        if signal != libc::SIGKILL && signal != libc::SIGSTOP {
            // SAFETY: async-signal-safe, in the child about to exec.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
    }
}

/// The interpreter, first one found.
pub const SHELLS: [&str; 3] = ["/usr/bin/bash", "/bin/bash", "/bin/sh"];

/// The first of `SHELLS` that exists here.
pub fn program() -> std::io::Result<&'static str> {
    SHELLS
        .iter()
        .copied()
        .find(|p| std::path::Path::new(p).exists())
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "no shell in /usr/bin or /bin")
        })
}

/// The environment every shell starts with; nothing of the server's.
/// HOME is the project, so what programs keep of a session there
/// (histories, a pager's or an editor's state, settings they write) is
/// sent to `/tmp` instead, where the sandbox keeps it while it runs:
/// `duet pull`, the checkpoints and the diffs never carry it.
pub const SHELL_ENV: [(&str, &str); 11] = [
    (
        "PATH",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ),
    ("HOME", "/workspace"),
    ("LANG", "C.UTF-8"),
    ("TERM", "xterm-256color"),
    ("XDG_CONFIG_HOME", "/tmp/.config"),
    ("XDG_STATE_HOME", "/tmp/.local/state"),
    ("LESSHISTFILE", "/tmp/.lesshst"),
    ("NODE_REPL_HISTORY", "/tmp/.node_repl_history"),
    // Python 3.13 on; older ones read PYTHONSTARTUP, which does the same.
    ("PYTHON_HISTORY", PYTHON_HISTORY),
    ("PYTHONSTARTUP", PYTHON_STARTUP),
    // Vim as without a vimrc (its defaults), its viminfo in /tmp.
    (
        "VIMINIT",
        "source $VIMRUNTIME/defaults.vim | set viminfofile=/tmp/.viminfo",
    ),
];

/// Where interactive Python keeps its history.
const PYTHON_HISTORY: &str = "/tmp/.python_history";

/// The file of `PYTHONSTARTUP` in the sandbox, and what it holds: the
/// history read from and written to `PYTHON_HISTORY`; a history that is
/// not empty keeps Python's own `site` from using `~/.python_history`.
pub const PYTHON_STARTUP: &str = "/etc/duet/python-startup.py";
pub const PYTHON_STARTUP_TEXT: &str = "\
# Duet: the interpreter's history is kept in /tmp, not in HOME (the project).
try:
    import atexit as _duet_atexit, readline as _duet_readline
except ImportError:
    pass
else:
    try:
        _duet_readline.read_history_file('/tmp/.python_history')
    except OSError:
        pass
    if _duet_readline.get_current_history_length() == 0:
        _duet_readline.add_history('')

    def _duet_save_history():
        try:
            _duet_readline.write_history_file('/tmp/.python_history')
        except OSError:
            pass

    _duet_atexit.register(_duet_save_history)
";

pub use crate::support::shell_quote as quote;

/// How the shell runs the command: it sources the command's file (so that
/// what it defines stays; bash reads a file whole, where it reads its
/// stdin pipe a byte at a time).
pub fn source_file(path: &str) -> String {
    format!(". {}", quote(path))
}

/// How the shell runs the command when its file cannot be written (a full
/// `/tmp`): the text itself, through the pipe.
pub fn eval_text(cmd: &str) -> String {
    format!("eval {}", quote(cmd))
}

/// The text written to the shell to run one command: `run` (from
/// `source_file` or `eval_text`).
pub fn script(
    nonce: &str,
    run: &str,
    cwd: Option<&str>,
    env: &BTreeMap<String, String>,
    out: &str,
    err: &str,
) -> String {
    let source = run.to_string();
    // A per-command cwd or env applies to this command only: a subshell.
    let body = if cwd.is_none() && env.is_empty() {
        source
    } else {
        let mut parts = Vec::new();
        if let Some(dir) = cwd {
            parts.push(format!("cd -- {} || exit 1", quote(dir)));
        }
        for (key, value) in env {
            parts.push(format!("export {}", quote(&format!("{key}={value}"))));
        }
        parts.push(source);
        format!("( {} )", parts.join("; "))
    };
    format!(
        "{{ {body}\n}} </dev/null >{} 2>{}; __duet_status=$?; \
         {save}; \
         builtin printf '\\036%s:%d\\036\\n' {nonce} \"$__duet_status\"\n",
        quote(out),
        quote(err),
        save = save_state()
    )
}

/// Whether the shell came back to its prompt after the stop signal's trap
/// ran (the prompt mark `\x1eP1\x1e`).
pub fn stopped_at_prompt(ctl: &[u8]) -> bool {
    ctl.windows(4).any(|w| w == b"\x1eP1\x1e")
}

/// Whether the shell printed any prompt mark.
pub fn at_prompt(ctl: &[u8]) -> bool {
    ctl.windows(2).any(|w| w == b"\x1eP")
}

/// Finds the sentinel of `nonce` in what the shell printed; returns the
/// exit status.
pub fn find_sentinel(ctl: &[u8], nonce: &str) -> Option<i32> {
    let text = String::from_utf8_lossy(ctl);
    let start = text.find(&format!("\u{1e}{nonce}:"))? + nonce.len() + 2;
    let rest = &text[start..];
    let end = rest.find('\u{1e}')?;
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn run_in_bash(script_text: &str) -> String {
        let out = Command::new("bash")
            .args(["--noprofile", "--norc", "-c", script_text])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A command's file, as the supervisor writes it; how it is run.
    fn command_in(dir: &tempfile::TempDir, name: &str, cmd: &str) -> String {
        let path = dir.path().join(name);
        std::fs::write(&path, cmd).unwrap();
        source_file(path.to_str().unwrap())
    }

    #[test]
    fn a_command_without_its_file_runs_from_the_pipe() {
        let text = script(
            "N2",
            &eval_text("echo \"it's\"; (exit 5)"),
            None,
            &BTreeMap::new(),
            "/dev/stdout",
            "/dev/null",
        );
        let ctl = run_in_bash(&text);
        assert!(ctl.starts_with("it's\n"), "{ctl}");
        assert_eq!(find_sentinel(ctl.as_bytes(), "N2"), Some(5));
    }

    #[test]
    fn prompt_marks_say_whether_the_stop_ran() {
        assert!(stopped_at_prompt(b"x\x1eP1\x1e\n"));
        assert!(!stopped_at_prompt(b"\x1eP\x1e\n\x1eabc:0\x1e\n"));
        assert!(at_prompt(b"\x1eabc:0\x1e\n\x1eP\x1e\n"));
        assert!(!at_prompt(b"\x1eabc:0\x1e\n"));
        assert!(command_text("ls").ends_with("\nls"));
    }

    #[test]
    fn quoting_survives_any_text() {
        for s in ["plain", "it's", "'", "a\nb", "$(rm -rf /) `x` \\ \"q\"", ""] {
            assert_eq!(run_in_bash(&format!("printf %s {}", quote(s))), s);
        }
    }

    #[test]
    fn script_reports_status_and_keeps_streams_apart() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("o");
        let err = dir.path().join("e");
        let cmd = command_in(&dir, "c1", "echo out; echo err >&2; (exit 3)");
        let text = script(
            "N1",
            &cmd,
            None,
            &BTreeMap::new(),
            out.to_str().unwrap(),
            err.to_str().unwrap(),
        );
        let ctl = run_in_bash(&text);
        assert_eq!(find_sentinel(ctl.as_bytes(), "N1"), Some(3));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "out\n");
        assert_eq!(std::fs::read_to_string(&err).unwrap(), "err\n");
    }

    #[test]
    fn cwd_and_env_apply_to_one_command() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("o");
        let env = BTreeMap::from([("GREETING".to_string(), "hi 'there'".to_string())]);
        let first = script(
            "N",
            &command_in(&dir, "c1", "pwd; echo \"$GREETING\""),
            Some("/usr"),
            &env,
            out.to_str().unwrap(),
            "/dev/null",
        );
        let second = script(
            "M",
            &command_in(&dir, "c2", "echo \"[$GREETING]\""),
            None,
            &BTreeMap::new(),
            "/dev/stdout",
            "/dev/null",
        );
        let ctl = run_in_bash(&format!("cd /; {first}{second}"));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "/usr\nhi 'there'\n");
        assert!(ctl.contains("[]"), "{ctl}");
    }

    #[test]
    fn sentinel_needs_the_nonce() {
        assert_eq!(find_sentinel(b"\x1eabc:0\x1e\n", "abd"), None);
        assert_eq!(find_sentinel(b"junk\x1eabc:127\x1e\n", "abc"), Some(127));
        assert_eq!(find_sentinel(b"\x1eabc:1", "abc"), None);
    }
}
