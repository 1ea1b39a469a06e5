//! End to end, the room's shared terminal from a person's terminal (issue
//! 12): the real binary in tmux on a real `duet serve`. `duet term` draws
//! `less` full screen with its key modes mirrored, types, detaches with
//! Ctrl+] and leaves the terminal as it was; a second attachment finds the
//! same shell and `exit` ends it; two viewers type into one terminal and
//! see each other; the TUI's terminal view toggles with F3 and runs a
//! command typed into it (keys typed while it attaches too); a one-shot `!top` names F3 and `duet term`;
//! `duet term` re-attaches after a backend restart, finds the embedded
//! backend as `duet exec` does, and SIGTERM or SIGHUP restore the
//! terminal. Needs tmux (the CI script installs it).

use crate::common;
use crate::common::Server;
use crate::common::tmux::{Tmux, client_env, shared_client_env};

/// The status bar: the last line of a screen.
fn status(screen: &str) -> &str {
    screen.lines().last().unwrap_or("")
}

/// `duet term` of `room` on `server`, as typed into a shell.
fn term_line(server: &Server, room: &str) -> String {
    format!("duet term --server {} --room {room}", server.url(""))
}

#[tokio::test]
async fn duet_term_draws_less_detaches_with_ctrl_bracket_and_restores_the_terminal() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.shell("ann", &client_env(dir.path(), "ann"), (100, 30));
    // The person's terminal as it was, to compare after.
    let saved = dir.path().join("before.stty");
    tmux.type_text("ann", &format!("stty -g > {}", saved.display()));
    tmux.keys("ann", &["Enter"]);
    tmux.type_text("ann", &term_line(&server, "term-room"));
    tmux.keys("ann", &["Enter"]);
    let screen = tmux
        .wait("ann", "the attached terminal", |s| {
            status(s).contains("terminal 100×29") && status(s).contains("Ctrl+] detach")
        })
        .await;
    assert!(status(&screen).contains("term-room"), "{screen}");
    assert_eq!(tmux.display("ann", "#{alternate_on}"), "1");

    tmux.type_text(
        "ann",
        "printf 'first line\\nsecond line\\n' > notes.txt; less notes.txt",
    );
    tmux.keys("ann", &["Enter"]);
    let screen = tmux
        .wait("ann", "less showing the file", |s| {
            s.contains("second line") && s.contains("(END)")
        })
        .await;
    assert!(
        screen.starts_with("first line"),
        "less draws from the top: {screen}"
    );
    // less asked for application cursor keys: the person's terminal was
    // told, so its raw arrow keys are what less expects.
    tmux.wait("ann", "less's key modes mirrored", |_| {
        tmux.display("ann", "#{keypad_cursor_flag}") == "1"
    })
    .await;
    tmux.keys("ann", &["q"]);
    // The shell's next prompt, not only less's screen gone: less may still
    // read the keys typed before it has exited (CI's `s` of `sleep` went to it).
    tmux.wait("ann", "the shell again", |s| {
        !s.contains("(END)")
            && s.lines()
                .skip_while(|l| !l.contains("less notes.txt"))
                .nth(1)
                .is_some_and(|l| l.starts_with("~ $"))
    })
    .await;
    // Ctrl+C is the shell's, not a way out.
    tmux.type_text("ann", "sleep 100");
    tmux.keys("ann", &["Enter"]);
    tmux.keys("ann", &["C-c"]);
    tmux.type_text("ann", "echo still-$((20+3))");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the echo after Ctrl+C", |s| s.contains("still-23"))
        .await;

    tmux.keys("ann", &["C-]"]);
    tmux.wait("ann", "the detach note", |s| {
        s.contains("[detached from the terminal of room term-room]")
    })
    .await;
    assert_eq!(tmux.display("ann", "#{alternate_on}"), "0");
    assert_eq!(tmux.display("ann", "#{keypad_cursor_flag}"), "0");
    assert_eq!(tmux.display("ann", "#{keypad_flag}"), "0");
    assert_eq!(tmux.display("ann", "#{cursor_flag}"), "1");
    tmux.type_text(
        "ann",
        &format!(
            "stty -g | cmp -s - {} && echo TTY-RESTORED-$((2*2))",
            saved.display()
        ),
    );
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the tty's settings as before", |s| {
        s.contains("TTY-RESTORED-4")
    })
    .await;

    // The shell ran on: attaching again shows it, and `exit` ends it.
    tmux.type_text("ann", "clear; ");
    tmux.type_text("ann", &term_line(&server, "term-room"));
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the same shell's screen", |s| {
        s.contains("still-23") && status(s).contains("Ctrl+] detach")
    })
    .await;
    tmux.type_text("ann", "exit 7");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the exit note", |s| {
        s.contains("[the terminal exited (code 7)]")
    })
    .await;
    tmux.type_text("ann", "echo code=$?");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "duet term's own exit code", |s| s.contains("code=0"))
        .await;
    assert_eq!(tmux.display("ann", "#{alternate_on}"), "0");
}

#[tokio::test]
async fn two_viewers_type_into_one_terminal_and_the_smaller_window_sets_its_size() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("term --server {} --room pair-term", server.url(""));
    tmux.start_sized("ann", &client_env(dir.path(), "ann"), &args, (100, 30));
    tmux.wait("ann", "attached", |s| status(s).contains("terminal 100×29"))
        .await;
    tmux.start_sized("bob", &client_env(dir.path(), "bob"), &args, (80, 20));
    // The smallest window rules: both draw 80×19; ann's is letterboxed.
    tmux.wait("bob", "attached at its size", |s| {
        status(s).contains("terminal 80×19")
    })
    .await;
    let ann = tmux
        .wait("ann", "the smaller size", |s| {
            status(s).contains("terminal 80×19 · a smaller window sets the size")
        })
        .await;
    assert!(ann.lines().count() >= 29, "{ann}");

    tmux.type_text("ann", "echo from-ann-$((1+1))");
    for who in ["ann", "bob"] {
        tmux.wait(who, "ann's half-typed line", |s| {
            s.contains("echo from-ann-$((1+1))")
        })
        .await;
    }
    tmux.wait("bob", "who is typing", |s| {
        status(s).contains("ann is typing")
    })
    .await;
    tmux.keys("ann", &["Enter"]);
    for who in ["ann", "bob"] {
        tmux.wait(who, "the echo", |s| s.contains("\nfrom-ann-2"))
            .await;
    }
    tmux.type_text("bob", "echo from-bob-$((2+2))");
    tmux.keys("bob", &["Enter"]);
    for who in ["ann", "bob"] {
        tmux.wait(who, "bob's echo", |s| s.contains("\nfrom-bob-4"))
            .await;
    }
    tmux.wait("ann", "who is typing", |s| {
        status(s).contains("bob is typing")
    })
    .await;
    // bob leaves: ann's window counts alone again.
    tmux.keys("bob", &["C-]"]);
    tmux.wait("bob", "detached", |s| s.contains("EXITED 0"))
        .await;
    tmux.wait("ann", "its own size again", |s| {
        status(s).contains("terminal 100×29") && !status(s).contains("smaller window")
    })
    .await;
}

#[tokio::test]
async fn the_tuis_terminal_view_toggles_with_f3_and_runs_what_is_typed() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("--server {} --room view-term", server.url(""));
    tmux.start("ann", &client_env(dir.path(), "ann"), &args);
    tmux.wait("ann", "the footer's terminal key", |s| {
        s.contains("F3 terminal")
    })
    .await;

    // A one-shot command that needs a terminal says where to run it.
    tmux.type_text("ann", "!top");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the hint", |s| {
        s.contains("`top` needs a terminal: press F3") && s.contains("duet term")
    })
    .await;
    tmux.keys("ann", &["C-u"]);

    tmux.keys("ann", &["F3"]);
    let screen = tmux
        .wait("ann", "the terminal view", |s| {
            s.contains("Terminal 70×35") && s.contains("keys go to the room's terminal")
        })
        .await;
    assert!(status(&screen).contains(" · terminal"), "{screen}");
    tmux.type_text("ann", "echo hi-$((40+2))");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the echo in the view", |s| s.contains("│hi-42"))
        .await;

    // Ctrl+] gives the keys back: typing goes to the input.
    tmux.keys("ann", &["C-]"]);
    tmux.wait("ann", "the keys back", |s| {
        !s.contains("keys go to the room's terminal")
    })
    .await;
    tmux.type_text("ann", "draft");
    tmux.wait("ann", "the input", |s| s.contains("› draft"))
        .await;
    tmux.keys("ann", &["C-u"]);
    // F3 hides it: the output pane lists commands again; the status bar
    // still says a terminal runs.
    tmux.keys("ann", &["F3"]);
    let screen = tmux
        .wait("ann", "the output pane", |s| s.contains("No commands yet"))
        .await;
    assert!(status(&screen).contains("terminal"), "{screen}");
}

#[tokio::test]
async fn keys_typed_while_the_tuis_terminal_view_attaches_arrive_in_order() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("--server {} --room early-term", server.url(""));
    tmux.start("ann", &client_env(dir.path(), "ann"), &args);
    tmux.wait("ann", "the footer's terminal key", |s| {
        s.contains("F3 terminal")
    })
    .await;
    // The room's terminal runs, at its prompt; the view is hidden again.
    tmux.keys("ann", &["F3"]);
    tmux.wait("ann", "the terminal at its prompt", |s| {
        s.contains("Terminal 70×35") && shows_prompt(s)
    })
    .await;
    tmux.keys("ann", &["C-]"]);
    tmux.wait("ann", "the keys back", |s| {
        !s.contains("keys go to the room's terminal")
    })
    .await;
    tmux.keys("ann", &["F3"]);
    tmux.wait("ann", "the output pane", |s| s.contains("No commands yet"))
        .await;
    // F3 and the keys in one write: they come while the view attaches.
    tmux.keys("ann", &["F3", "echo early-$((5*5))", "Enter"]);
    let screen = tmux
        .wait("ann", "the early keys run", |s| s.contains("│early-25"))
        .await;
    assert!(!screen.contains("were not sent"), "{screen}");
    assert!(screen.contains("echo early-$((5*5))"), "{screen}");
}

#[tokio::test]
async fn duet_term_says_it_reconnects_and_attaches_again_after_the_backend_restarts() {
    let data = tempfile::tempdir().unwrap();
    let addr = format!("127.0.0.1:{}", common::free_port());
    let server = Server::start_at(&addr, data.path(), &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("term --server {} --room back-term", server.url(""));
    tmux.start_sized("ann", &client_env(dir.path(), "ann"), &args, (100, 30));
    tmux.wait("ann", "attached", |s| status(s).contains("terminal 100×29"))
        .await;
    server.stop().await;
    tmux.wait("ann", "the drop, said", |s| {
        status(s).contains("reconnecting in") && status(s).contains("Can't reach the server")
    })
    .await;
    // Still attached in spirit: the person's terminal stays duet term's.
    assert_eq!(tmux.display("ann", "#{alternate_on}"), "1");
    let _server = Server::start_at(&addr, data.path(), &[]).await;
    tmux.wait("ann", "attached again", |s| {
        status(s).contains("terminal 100×29")
    })
    .await;
    // The backend restarted, so its terminal is a new shell: it works.
    tmux.type_text("ann", "echo again-$((3*3))");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the echo", |s| s.contains("\nagain-9"))
        .await;
}

#[tokio::test]
async fn duet_term_finds_the_embedded_backend_and_the_tui_sees_its_typing() {
    if common::only_duet_serve("the embedded backend (duet without --server)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_embedded(dir.path(), "tui", "local-term").await;
    tmux.keys("tui", &["F3"]);
    tmux.wait("tui", "the terminal view", |s| s.contains("Terminal 70×35"))
        .await;
    tmux.keys("tui", &["C-]"]);
    // Like `duet exec`, `duet term` without --server finds the backend
    // of its data directory.
    let bob = shared_client_env(dir.path(), "bob");
    tmux.start_sized("term", &bob, "term --room local-term", (100, 30));
    tmux.wait("term", "attached at the smaller size", |s| {
        status(s).contains("terminal 70×29")
    })
    .await;
    tmux.type_text("term", "echo embedded-$((6*7))");
    tmux.wait("tui", "bob typing into the terminal", |s| {
        s.contains("bob is typing")
    })
    .await;
    tmux.keys("term", &["Enter"]);
    tmux.wait("tui", "bob's echo in the view", |s| {
        s.contains("│embedded-42")
    })
    .await;
    // Quit both, so that the embedded backend stops and its room's disk
    // image is unmounted.
    tmux.keys("term", &["C-]"]);
    tmux.wait("term", "detached", |s| s.contains("EXITED 0"))
        .await;
    tmux.keys("tui", &["C-c"]);
    tmux.keys("tui", &["C-c"]);
    tmux.wait("tui", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
}

#[tokio::test]
async fn sigterm_and_sighup_leave_the_terminal_as_it_was() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    for (session, signal) in [("term", libc::SIGTERM), ("hup", libc::SIGHUP)] {
        // A room each: the first one's terminal still runs its less.
        let room = format!("signal-{session}");
        let args = format!("term --server {} --room {room}", server.url(""));
        tmux.start_sized(session, &client_env(dir.path(), "ann"), &args, (100, 30));
        // Attached, and the shell's prompt drawn: keys typed before it
        // could be lost to the shell's start.
        tmux.wait(session, "attached at the prompt", |s| {
            status(s).contains("Ctrl+] detach") && shows_prompt(s)
        })
        .await;
        // less turns on application cursor keys, mirrored outside.
        tmux.type_text(session, "seq 100 | less");
        tmux.keys(session, &["Enter"]);
        tmux.wait(session, "less", |_| {
            tmux.display(session, "#{keypad_cursor_flag}") == "1"
        })
        .await;
        let shell: i32 = tmux.display(session, "#{pane_pid}").parse().unwrap();
        let duet = child_of(shell);
        // SAFETY: signalling the test's own `duet term`.
        unsafe { libc::kill(duet, signal) };
        let screen = tmux
            .wait(session, "the way out", |s| s.contains("EXITED 1"))
            .await;
        assert!(
            screen.contains(&format!("[detached from the terminal of room {room}: SIG")),
            "{screen}"
        );
        assert_eq!(tmux.display(session, "#{alternate_on}"), "0");
        assert_eq!(tmux.display(session, "#{keypad_cursor_flag}"), "0");
        tmux.keys(session, &["q"]);
    }
}

/// Whether the terminal's shell drew its prompt (`\w \$ `, e.g. `~ $`),
/// full screen or in the TUI's pane (between its borders).
fn shows_prompt(screen: &str) -> bool {
    screen.lines().flat_map(|l| l.split('│')).any(|part| {
        let part = part.trim_end();
        part.ends_with(" $") || part.ends_with(" #")
    })
}

/// The one child process of `pid` (the pane's shell runs `duet`).
fn child_of(pid: i32) -> i32 {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    children
        .split_whitespace()
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no child of {pid}"))
}

#[tokio::test]
async fn resizing_the_window_resizes_the_shared_terminal() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("term --server {} --room size-term", server.url(""));
    tmux.start_sized("ann", &client_env(dir.path(), "ann"), &args, (100, 30));
    tmux.wait("ann", "attached", |s| status(s).contains("terminal 100×29"))
        .await;
    tmux.type_text("ann", "stty size");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the shell's size", |s| s.contains("\n29 100"))
        .await;
    tmux.run(&["resize-window", "-t", "=ann:", "-x", "90", "-y", "25"]);
    tmux.wait("ann", "the new size", |s| {
        status(s).contains("terminal 90×24")
    })
    .await;
    tmux.type_text("ann", "clear; stty size");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the shell's new size", |s| {
        s.lines().any(|l| l == "24 90")
    })
    .await;
}
