//! End to end, as people use it: the real binary in tmux on a real
//! backend. Two people in one room see each other's chat and commands, Esc
//! on someone else's command asks then interrupts, Ctrl+X then `y` empties
//! both screens; the agent's reply
//! streams to both with its command; PageUp loads older pages; /put and
//! /get move files; SIGTERM, SIGHUP and Ctrl+Z leave the terminal as it
//! was; `duet serve` honours NO_COLOR. Needs tmux (the CI script installs it).

use crate::common::Server;
use crate::common::agent_support;
use crate::common::tmux::{SCREEN_WAIT, Tmux, client_env};
use std::time::Duration;

#[tokio::test]
async fn two_people_share_a_room_and_clean_it_up() {
    let (server, data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let url = server.url("");
    tmux.start_pair(dir.path(), &url, "e2e-room", ["ada", "bob"])
        .await;
    let ada = tmux.screen("ada");
    assert!(ada.contains("e2e-room"), "{ada}");
    assert_eq!(
        tmux.display("bob", "#{alternate_on}#{mouse_any_flag}"),
        "11",
        "the UI uses the alternate screen and the mouse"
    );
    assert!(
        ada.contains(&format!(
            "join: duet join {}/e2e-room",
            url.trim_start_matches("http://")
        )),
        "{ada}"
    );

    // A bracketed paste inserts its lines without sending them.
    tmux.run(&["set-buffer", "pasted one\npasted two"]);
    tmux.run(&["paste-buffer", "-p", "-t", "ada"]);
    tmux.wait("ada", "the pasted lines in the input", |s| {
        s.contains("› pasted one") && s.contains("  pasted two")
    })
    .await;
    tmux.keys("ada", &["C-c"]);
    tmux.wait("ada", "an empty input", |s| !s.contains("pasted one"))
        .await;

    tmux.type_text("ada", "hello from ada");
    tmux.keys("ada", &["Enter"]);
    tmux.type_text("ada", "!echo hi");
    tmux.keys("ada", &["Enter"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the message and the command", |s| {
            s.contains("hello from ada")
                && s.contains("ada $ echo hi")
                && s.lines().any(|l| l.contains("│hi "))
                && s.contains("✓ 0")
        })
        .await;
    }

    assert!(
        !tmux.screen("bob").contains("pasted"),
        "a paste is never sent"
    );

    // Esc on someone else's command asks first; y interrupts it.
    tmux.type_text("ada", "!sleep 30");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("bob", "the command running", |s| {
        s.contains("ada $ sleep 30")
    })
    .await;
    tmux.keys("bob", &["Escape"]);
    tmux.wait("bob", "the question", |s| {
        s.contains("Stop ada's `sleep 30`?")
    })
    .await;
    tmux.keys("bob", &["y"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the command interrupted", |s| {
            s.contains("■ interrupted")
        })
        .await;
    }

    tmux.keys("ada", &["C-x"]);
    tmux.wait("ada", "the cleanup dialog", |s| {
        s.contains("Clean up room e2e-room?")
    })
    .await;
    tmux.keys("ada", &["y"]);
    for who in ["ada", "bob"] {
        // Emptied but for the record of who cleaned it up.
        tmux.wait(who, "who cleaned the room up", |s| {
            s.contains("ada cleaned up the room") && !s.contains("hello from ada")
        })
        .await;
    }
    for who in ["ada", "bob"] {
        tmux.wait(who, "no commands left", |s| s.contains("No commands yet"))
            .await;
    }

    // /name: the new name for everyone.
    tmux.type_text("ada", "/name ada-two");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("bob", "ada's new name", |s| s.contains("● ada-two"))
        .await;

    // Ctrl+C twice leaves, and the terminal is given back.
    tmux.keys("bob", &["C-c"]);
    tmux.keys("bob", &["C-c"]);
    tmux.wait("bob", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
    assert_eq!(
        tmux.display("bob", "#{alternate_on}"),
        "0",
        "the alternate screen is left"
    );
    assert_eq!(
        tmux.display("bob", "#{mouse_any_flag}"),
        "0",
        "mouse capture is off"
    );
    drop(tmux);
    drop(server);
    drop(data);
}

#[tokio::test]
async fn the_agent_reply_streams_to_everyone_with_its_command() {
    use agent_support::{FakeModel, Script};
    let pieces = [
        "Checking ",
        "the ",
        "room ",
        "for ",
        "you. ",
        "<run>echo from-agent</run>",
    ];
    let model = FakeModel::start(vec![Script::Paced(
        pieces.iter().map(|p| p.to_string()).collect(),
        Duration::from_millis(600),
    )])
    .await;
    let (server, _data) = Server::fresh_with(&model.one_round_args()).await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_pair(dir.path(), &server.url(""), "agent-room", ["ada", "bob"])
        .await;
    tmux.type_text("ada", "please check the room");
    tmux.keys("ada", &["Enter"]);
    // While it streams: the spinner, the elapsed time and the text so far.
    tmux.wait("bob", "the reply streaming", |s| {
        s.contains("✦ agent ")
            && s.contains("Checking the")
            && duet::tui::cell::SPINNER
                .iter()
                .any(|f| s.contains(&format!("{f} ")))
            && !s.contains("╭ $ echo from-agent")
    })
    .await;
    for who in ["ada", "bob"] {
        tmux.wait(who, "the stored reply with its command block", |s| {
            s.contains("please check the room")
                && s.contains("Checking the room for you.")
                && s.contains("╭ $ echo from-agent")
                && s.contains("│ from-agent")
                && s.contains("✦ agent $ echo")
        })
        .await;
    }
}

#[tokio::test]
async fn page_up_at_the_top_loads_older_messages_from_the_backend() {
    let (server, _data) = Server::fresh().await;
    let url = server.url("");
    let client = duet::client::http::HttpClient::new(&url, "long-room", None, "carol").unwrap();
    // Each message gets a system answer (no model): 140 messages in all,
    // more than the 100 a state carries.
    for i in 0..70 {
        client.message(&format!("note number {i}")).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("--server {url} --room long-room");
    tmux.start("ada", &client_env(dir.path(), "ada"), &args);
    tmux.wait("ada", "the latest note", |s| s.contains("note number 69"))
        .await;
    let first_note = |s: &str| s.lines().any(|l| l.starts_with("  note number 0 "));
    assert!(!first_note(&tmux.screen("ada")), "older than the state");
    let deadline = tokio::time::Instant::now() + SCREEN_WAIT;
    loop {
        tmux.keys("ada", &["PageUp"]);
        tokio::time::sleep(Duration::from_millis(100)).await;
        if first_note(&tmux.screen("ada")) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the first note never showed:\n{}",
            tmux.screen("ada")
        );
    }
    // End follows the latest again.
    tmux.keys("ada", &["C-End"]);
    tmux.wait("ada", "the latest note again", |s| {
        s.contains("note number 69")
    })
    .await;
}

#[tokio::test]
async fn put_and_get_move_files_between_here_and_the_workspace() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "from my machine\n").unwrap();
    let back = dir.path().join("back");
    std::fs::create_dir(&back).unwrap();
    let args = format!("--server {} --room files-room", server.url(""));
    tmux.start("ada", &client_env(dir.path(), "ada"), &args);
    tmux.wait("ada", "connected", |s| s.contains("connected"))
        .await;

    tmux.type_text("ada", &format!("/put {} docs/", notes.display()));
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the upload", |s| {
        s.contains("sent 16 bytes to docs/notes.txt")
    })
    .await;
    let (_, body) = server
        .post(
            "/api/rooms/files-room/sandbox/exec",
            serde_json::json!({"cmd": "cat docs/notes.txt; echo made here > result.txt"}),
        )
        .await;
    assert_eq!(body["result"]["stdout"], "from my machine\n");

    tmux.type_text("ada", &format!("/get result.txt {}", back.display()));
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the download", |s| s.contains("got 10 bytes"))
        .await;
    assert_eq!(
        std::fs::read_to_string(back.join("result.txt")).unwrap(),
        "made here\n"
    );

    tmux.type_text("ada", "/get missing.txt");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the error", |s| s.contains("404")).await;
}

/// Writes the people's `duet.toml` (every client of `dir` reads it).
fn write_config(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
    let folder = dir.join("config").join("duet");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("duet.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The input edits as a terminal person expects (a word back, Ctrl+W,
/// undo, Shift+arrows select), with keys of `duet.toml`'s `[keys]`:
/// Enter starts a new line and Ctrl+S sends.
#[tokio::test]
async fn the_input_edits_by_words_undoes_and_selects_and_sends_with_configured_keys() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        "[keys]\nsend = \"ctrl+s\"\nnewline = [\"enter\", \"alt+enter\"]\n",
    );
    let tmux = Tmux::new(dir.path());
    tmux.start_pair(dir.path(), &server.url(""), "e2e-editing", ["ada", "bob"])
        .await;
    tmux.keys("ada", &["C-t"]);
    tmux.type_text("ada", "say hello wrold");
    tmux.keys("ada", &["M-b", "C-w"]);
    tmux.wait("ada", "a word deleted", |s| s.contains("» say wrold"))
        .await;
    tmux.keys("ada", &["C-_"]);
    tmux.wait("ada", "the word back by undo", |s| {
        s.contains("» say hello wrold")
    })
    .await;
    // Shift+Left selects the misspelt word; typing replaces it.
    tmux.keys(
        "ada",
        &["End", "S-Left", "S-Left", "S-Left", "S-Left", "S-Left"],
    );
    tmux.type_text("ada", "world");
    tmux.wait("ada", "the selection replaced", |s| {
        s.contains("» say hello world")
    })
    .await;
    // Ctrl+Left twice: before `hello`; Ctrl+K cuts the rest, undo (Alt+U)
    // brings it back.
    tmux.keys("ada", &["C-Left", "C-Left", "C-k"]);
    tmux.wait("ada", "the line cut", |s| {
        s.contains("» say") && !s.contains("say hello")
    })
    .await;
    tmux.keys("ada", &["M-u", "End", "Enter"]);
    tmux.type_text("ada", "second line");
    tmux.wait("ada", "two lines in the input", |s| {
        s.contains("» say hello world") && s.contains("  second line")
    })
    .await;
    tmux.keys("ada", &["C-s"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "both lines sent", |s| {
            s.contains("say hello world") && s.contains("second line") && !s.contains("» say hello")
        })
        .await;
    }
}

#[tokio::test]
async fn a_bad_key_in_the_config_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        "theme = \"light\"\n[keys]\nundo = \"ctrl+zz\"\n",
    );
    let tmux = Tmux::new(dir.path());
    tmux.start("ada", &client_env(dir.path(), "ada"), "--room r1");
    let screen = tmux
        .wait("ada", "the way out", |s| s.contains("EXITED 1"))
        .await;
    let joined = screen.replace('\n', "");
    assert!(
        joined.contains(&format!(
            "duet: {} at line 3, column 8 is not valid: \"ctrl+zz\" is not a key",
            path.display()
        )),
        "{screen}"
    );
}

/// Starts `duet` on `url`'s room `pairing` from a shell in session `name`,
/// after saving the tty's settings and naming the window `before`.
async fn tui_from_a_shell(tmux: &Tmux, dir: &std::path::Path, name: &str, url: &str) {
    tmux.shell(name, &client_env(dir, "ada"), (100, 30));
    let saved = dir.join(format!("{name}.stty"));
    tmux.type_text(
        name,
        &format!(
            "stty -g > {}; printf '\\033]2;before\\033\\\\'; duet --server {url} --room pairing; echo EXITED $?",
            saved.display()
        ),
    );
    tmux.keys(name, &["Enter"]);
    tmux.wait(name, "the room", |s| s.contains("join: duet"))
        .await;
    assert_eq!(tmux.display(name, "#{pane_title}"), "duet: pairing");
    assert_eq!(tmux.display(name, "#{alternate_on}"), "1");
}

/// The terminal is as `tui_from_a_shell` found it: main screen, cursor
/// shown, the same tty settings (cooked mode), the old title.
async fn terminal_is_as_it_was(tmux: &Tmux, dir: &std::path::Path, name: &str) {
    assert_eq!(tmux.display(name, "#{alternate_on}"), "0");
    assert_eq!(tmux.display(name, "#{cursor_flag}"), "1");
    assert_eq!(tmux.display(name, "#{mouse_any_flag}"), "0");
    assert_eq!(tmux.display(name, "#{pane_title}"), "before");
    let saved = dir.join(format!("{name}.stty"));
    tmux.type_text(
        name,
        &format!(
            "stty -g | cmp -s - {} && echo TTY-RESTORED-$((2*2))",
            saved.display()
        ),
    );
    tmux.keys(name, &["Enter"]);
    tmux.wait(name, "the tty's settings as before", |s| {
        s.contains("TTY-RESTORED-4")
    })
    .await;
}

#[tokio::test]
async fn sigterm_and_sighup_leave_the_terminal_as_it_was() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    for (name, signal) in [("term", libc::SIGTERM), ("hup", libc::SIGHUP)] {
        tui_from_a_shell(&tmux, dir.path(), name, &server.url("")).await;
        let duet = tmux.pane_child(name);
        // SAFETY: signalling the test's own `duet`.
        unsafe { libc::kill(duet, signal) };
        let screen = tmux
            .wait(name, "the way out", |s| s.contains("EXITED 1"))
            .await;
        assert!(screen.contains("duet: ended by SIG"), "{screen}");
        terminal_is_as_it_was(&tmux, dir.path(), name).await;
    }
}

#[tokio::test]
async fn ctrl_z_suspends_to_the_shell_and_fg_redraws() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tui_from_a_shell(&tmux, dir.path(), "ada", &server.url("")).await;
    tmux.type_text("ada", "half a thought");
    tmux.keys("ada", &["C-z"]);
    tmux.wait("ada", "the shell's job note", |s| s.contains("Stopped"))
        .await;
    terminal_is_as_it_was(&tmux, dir.path(), "ada").await;
    tmux.type_text("ada", "clear; fg");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the UI again, whole", |s| {
        s.contains("join: duet") && s.contains("half a thought")
    })
    .await;
    assert_eq!(tmux.display("ada", "#{alternate_on}"), "1");
    assert_eq!(tmux.display("ada", "#{pane_title}"), "duet: pairing");
    tmux.keys("ada", &["C-c"]);
    tmux.keys("ada", &["C-c"]);
    // The stopped job's `; echo EXITED` was dropped by the shell: ask.
    tmux.wait("ada", "the goodbye", |s| s.contains("Left room pairing"))
        .await;
    tmux.type_text("ada", "echo CODE=$?");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "a clean exit", |s| s.contains("CODE=0"))
        .await;
    terminal_is_as_it_was(&tmux, dir.path(), "ada").await;
}

/// `duet serve` colours its log on a terminal, and not when NO_COLOR is set.
#[tokio::test]
async fn serve_colours_its_log_on_a_terminal_unless_no_color_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    for (name, no_color) in [("plain", "1"), ("coloured", "")] {
        let data = dir.path().join(name);
        let args = format!("serve --listen 127.0.0.1:0 --data-dir {}", data.display());
        tmux.start_sized(
            name,
            &[("NO_COLOR", no_color.to_string())],
            &args,
            (140, 20),
        );
    }
    let with_escapes = |name: &str| {
        tmux.run(&["capture-pane", "-e", "-p", "-t", &format!("={name}:")])
            .contains('\x1b')
    };
    for name in ["plain", "coloured"] {
        tmux.wait(name, "the warning about no token", |s| {
            s.contains("no --token")
        })
        .await;
    }
    assert!(with_escapes("coloured"), "{}", tmux.screen("coloured"));
    assert!(!with_escapes("plain"), "{}", tmux.screen("plain"));
}
