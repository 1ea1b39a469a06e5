//! `duet term` and `duet exec` from a script, as a person's shell runs
//! them: a command that needs a terminal is not sent and `duet exec` says
//! where to run it (exit 2); `duet term` without a terminal says it needs
//! one. Neither reaches a backend, so these run the same on both.

use std::process::{Command, Stdio};

fn duet(args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(args)
        .env("DUET_DATA_DIR", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env_remove("DUET_SERVER")
        .env_remove("DUET_ROOM")
        .stdin(Stdio::null())
        .output()
        .expect("duet runs")
}

/// An address nothing listens on: nothing may be sent there.
const NOWHERE: &str = "http://127.0.0.1:9";

#[test]
fn duet_exec_points_a_command_that_needs_a_terminal_to_duet_term() {
    for cmd in ["top", "vim notes.txt", "python3", "less log.txt"] {
        let out = duet(&["exec", "--server", NOWHERE, "--room", "r1", "--", cmd]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        let program = cmd.split_whitespace().next().unwrap();
        assert!(
            stderr.contains(&format!("`{program}` needs a terminal: run `duet term`")),
            "{cmd}: {stderr}"
        );
        assert!(stderr.contains("--no-tty-check"), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn no_tty_check_sends_it_anyway() {
    let out = duet(&[
        "exec",
        "--no-tty-check",
        "--server",
        NOWHERE,
        "--room",
        "r1",
        "--",
        "top",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // It was sent: the unreachable backend is what fails.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("needs a terminal"), "{stderr}");
}

#[test]
fn duet_term_without_a_terminal_says_it_needs_one() {
    let out = duet(&["term", "--server", NOWHERE, "--room", "r1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`duet term` needs a terminal"), "{stderr}");
    let out = duet(&["term", "--server", NOWHERE]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no room: pass --room ROOM"), "{stderr}");
}
