//! End to end, two people pairing (issue 11): the real binary in tmux on a
//! real `duet serve`. Ann talks to the room and bob reads it with no agent
//! turn; bob's commands are lines of ann's chat and move both status bars'
//! directory; Esc asks before stopping someone else's command and stops
//! one's own at once; `exit` and a rename are recorded for everyone.
//! Needs tmux (the CI script installs it).

use crate::common::Server;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::tmux::{Tmux, client_env};

/// A screen line after its `HH:MM ` time (the chat's lines have one).
fn chat_line(line: &str) -> &str {
    let time = line.get(..6).unwrap_or("");
    let is_time = time.len() == 6 && time.as_bytes()[2] == b':' && time.ends_with(' ');
    if is_time { &line[6..] } else { "" }
}

/// The status bar: the last line of a screen.
fn status(screen: &str) -> &str {
    screen.lines().last().unwrap_or("")
}

#[tokio::test]
async fn talking_to_the_room_runs_no_turn_and_at_agent_asks() {
    let model = FakeModel::start(vec![Script::Stream(vec![
        "Nothing ".into(),
        "here yet.".into(),
    ])])
    .await;
    let (server, _data) = Server::fresh_with(&model.one_round_args()).await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_pair(dir.path(), &server.url(""), "talk-room", ["ann", "bob"])
        .await;
    tmux.keys("ann", &["C-t"]);
    tmux.wait("ann", "room mode", |s| s.contains("to the room"))
        .await;
    tmux.type_text("ann", "shall we start with the parser?");
    tmux.keys("ann", &["Enter"]);
    for who in ["ann", "bob"] {
        tmux.wait(who, "the room message, labelled", |s| {
            s.contains("ann → room") && s.contains("shall we start with the parser?")
        })
        .await;
    }
    // From room mode, @agent asks the agent: its one turn is the only one.
    tmux.type_text("ann", "@agent what is in the workspace?");
    tmux.keys("ann", &["Enter"]);
    for who in ["ann", "bob"] {
        tmux.wait(who, "the agent's reply", |s| {
            s.contains("what is in the workspace?") && s.contains("Nothing here yet.")
        })
        .await;
    }
    let asked = model.requests();
    assert_eq!(asked.len(), 1, "the room message ran no turn");
    let context = asked[0].1.to_string();
    assert!(
        context.contains("shall we start with the parser?"),
        "the agent sees the room message as context: {context}"
    );
    assert!(
        !tmux.screen("bob").contains("No model"),
        "no turn failed either"
    );
    assert!(
        tmux.screen("ann").contains("to the room"),
        "ann is still in room mode"
    );
}

#[tokio::test]
async fn commands_directories_and_esc_between_two_people() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("--server {} --room pair-room", server.url(""));
    tmux.start("ann", &client_env(dir.path(), "ann"), &args);
    tmux.start("bob", &client_env(dir.path(), "bob"), &args);
    for who in ["ann", "bob"] {
        tmux.wait(who, "both people present and the directory", |s| {
            s.contains("2 here") && status(s).contains("cwd /workspace")
        })
        .await;
    }

    // Bob's `cd` moves the room's shell: both status bars say so, and
    // ann's chat has his command as one line with its badge.
    tmux.type_text("bob", "!cd /tmp");
    tmux.keys("bob", &["Enter"]);
    for who in ["ann", "bob"] {
        tmux.wait(who, "the new directory", |s| status(s).contains("cwd /tmp"))
            .await;
    }
    tmux.wait("ann", "bob's command in the chat", |s| {
        s.lines()
            .any(|l| chat_line(l).starts_with("bob $ cd /tmp  ✓ 0"))
    })
    .await;

    // Esc on bob's command asks ann first; n lets it run.
    tmux.type_text("bob", "!sleep 30");
    tmux.keys("bob", &["Enter"]);
    tmux.wait("ann", "bob's command running", |s| {
        s.contains("bob $ sleep 30")
    })
    .await;
    tmux.keys("ann", &["Escape"]);
    tmux.wait("ann", "the question", |s| {
        s.contains("Stop bob's `sleep 30`?")
    })
    .await;
    tmux.keys("ann", &["n"]);
    tmux.wait("ann", "the question gone", |s| !s.contains("Stop bob's"))
        .await;
    let bob = tmux.screen("bob");
    assert!(!bob.contains("interrupted"), "n stops nothing: {bob}");
    // Asked again, y stops it, and everyone reads who did.
    tmux.keys("ann", &["Escape"]);
    tmux.wait("ann", "the question again", |s| {
        s.contains("Stop bob's `sleep 30`?")
    })
    .await;
    tmux.keys("ann", &["y"]);
    for who in ["ann", "bob"] {
        tmux.wait(who, "the interrupt and its record", |s| {
            s.contains("■ interrupted") && s.contains("ann interrupted `sleep 30`")
        })
        .await;
    }

    // Ann's own command: Esc stops it at once, no question.
    tmux.type_text("ann", "!sleep 31");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "ann's command running", |s| {
        s.contains("ann $ sleep 31")
    })
    .await;
    tmux.keys("ann", &["Escape"]);
    tmux.wait("bob", "ann's command interrupted", |s| {
        s.contains("ann interrupted `sleep 31`")
    })
    .await;
    assert!(!tmux.screen("ann").contains("Stop ann's"));

    // `exit` replaces the shell: the directory and variables reset, and
    // everyone sees it.
    tmux.type_text("bob", "!exit");
    tmux.keys("bob", &["Enter"]);
    for who in ["ann", "bob"] {
        tmux.wait(who, "the reset", |s| {
            status(s).contains("cwd /workspace") && s.contains("the shell exited after bob's")
        })
        .await;
    }
}

#[tokio::test]
async fn a_rename_shows_for_everyone_without_reconnecting() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_pair(dir.path(), &server.url(""), "name-room", ["ann", "bob"])
        .await;
    tmux.type_text("bob", "/name robert");
    tmux.keys("bob", &["Enter"]);
    tmux.wait("bob", "the new name in the status bar", |s| {
        status(s).contains("as robert")
    })
    .await;
    tmux.wait("ann", "the rename record and presence", |s| {
        s.contains("bob is now robert") && s.contains("● robert")
    })
    .await;
    // Later messages carry the new name.
    tmux.keys("bob", &["C-t"]);
    tmux.type_text("bob", "renamed");
    tmux.keys("bob", &["Enter"]);
    tmux.wait("ann", "robert's message", |s| s.contains("robert → room"))
        .await;
    // A name the backend refuses is said as a sentence, and kept.
    tmux.type_text("bob", &format!("/name {}", "x".repeat(40)));
    tmux.keys("bob", &["Enter"]);
    tmux.wait("bob", "the refusal", |s| {
        s.contains("Cannot rename you to") && s.contains("at most 32")
    })
    .await;
}
