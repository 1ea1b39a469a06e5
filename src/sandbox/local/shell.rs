//! The persistent shell inside a sandbox: how a command is written to bash
//! and how its end is recognised.
//!
//! Each command runs in the shell itself (so `cd` and `export` persist),
//! inside `{ eval '…'; }` with stdin from `/dev/null` and stdout and stderr
//! sent to two FIFOs made for that command alone: output a background job
//! writes later goes to its own command's FIFOs, never into another
//! command's result. Afterwards bash prints a sentinel carrying a random
//! nonce and the exit status on its own stdout, which only we read.

use std::collections::BTreeMap;

/// Where the per-command FIFOs live inside the sandbox.
pub const FIFO_DIR: &str = "/tmp/.duet";

/// Where the shell keeps, after each command that finished, its working
/// directory and exported variables, as a script a replacement shell
/// sources: a timeout or an interrupt replaces the shell, and these persist.
pub const STATE_FILE: &str = "/tmp/.duet/state";

/// Where the shell keeps, beside the state, its working directory as is
/// (`$PWD`, unquoted): where the next command runs.
pub const CWD_FILE: &str = "/tmp/.duet/cwd";

/// The first line a replacement shell reads: back to the last finished
/// command's directory and exports.
pub fn restore_line() -> String {
    format!(". {STATE_FILE} 2>/dev/null\n")
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
pub const SHELL_ENV: [(&str, &str); 4] = [
    (
        "PATH",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ),
    ("HOME", "/workspace"),
    ("LANG", "C.UTF-8"),
    ("TERM", "xterm-256color"),
];

pub use crate::support::shell_quote as quote;

/// The text written to the shell to run one command.
pub fn script(
    nonce: &str,
    cmd: &str,
    cwd: Option<&str>,
    env: &BTreeMap<String, String>,
    out: &str,
    err: &str,
) -> String {
    let eval = format!("eval {}", quote(cmd));
    // A per-command cwd or env applies to this command only: a subshell.
    let body = if cwd.is_none() && env.is_empty() {
        eval
    } else {
        let mut parts = Vec::new();
        if let Some(dir) = cwd {
            parts.push(format!("cd -- {} || exit 1", quote(dir)));
        }
        for (key, value) in env {
            parts.push(format!("export {}", quote(&format!("{key}={value}"))));
        }
        parts.push(eval);
        format!("( {} )", parts.join("; "))
    };
    format!(
        "{{ {body}\n}} </dev/null >{} 2>{}; __duet_status=$?; \
         {{ export -p; printf 'cd -- %q\\n' \"$PWD\"; }} 2>/dev/null >{STATE_FILE}; \
         printf %s \"$PWD\" 2>/dev/null >{CWD_FILE}; \
         printf '\\036%s:%d\\036\\n' {nonce} \"$__duet_status\"\n",
        quote(out),
        quote(err)
    )
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
        let text = script(
            "N1",
            "echo out; echo err >&2; (exit 3)",
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
            "pwd; echo \"$GREETING\"",
            Some("/usr"),
            &env,
            out.to_str().unwrap(),
            "/dev/null",
        );
        let second = script(
            "M",
            "echo \"[$GREETING]\"",
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
