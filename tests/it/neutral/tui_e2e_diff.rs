//! End to end, as people use it: the real binary in tmux on a real
//! backend with the fake model. The agent's turn runs `echo hi > a.txt`;
//! its reply ends with `changed 1 file (+1 −0) · /diff` for the person
//! who asked (and, counted when they join, for one who joins afterwards
//! in a 40-column window); `/diff` shows the diff since the turn began
//! (what was changed after it too), scrolls, and Esc closes it; the
//! narrow window does not panic. Needs tmux.

use crate::common::Server;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::apps::exec_with;
use crate::common::tmux::{Tmux, client_env};
use serde_json::json;

const CHANGED: &str = "changed 1 file (+1 −0) · /diff";

fn enter(tmux: &Tmux, who: &str, text: &str) {
    tmux.type_text(who, text);
    tmux.keys(who, &["Enter"]);
}

#[tokio::test]
async fn a_turns_reply_says_what_it_changed_and_diff_shows_it() {
    let model = FakeModel::start(vec![Script::Stream(vec![
        "Writing it. ".into(),
        "<run>echo hi > a.txt</run>".into(),
    ])])
    .await;
    let (server, _data) = Server::fresh_with(&model.one_round_args()).await;
    let room = "diff-room";
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("--server {} --room {room}", server.url(""));
    tmux.start("ada", &client_env(dir.path(), "ada"), &args);
    tmux.wait("ada", "the room", |s| s.contains("1 here")).await;

    enter(&tmux, "ada", "please write hi to a.txt");
    tmux.wait("ada", "the turn's reply with what it changed", |s| {
        s.contains("╭ $ echo hi > a.txt") && s.contains(CHANGED)
    })
    .await;

    // Someone changes more after the turn: /diff is "since the turn
    // began", so it shows that too; the reply's line stays as it was.
    let made = exec_with(
        &server,
        room,
        json!({ "cmd": "seq 1 200 > long.txt", "userId": "setup" }),
    )
    .await;
    assert_eq!(made["exitCode"], 0, "{made}");

    enter(&tmux, "ada", "/diff");
    let shown = tmux
        .wait("ada", "the diff view", |s| {
            s.contains(" since auto-") && s.contains("+hi")
        })
        .await;
    assert!(shown.contains("diff --git a/a.txt b/a.txt"), "{shown}");
    assert!(shown.contains("2 files (+201 −0)"), "{shown}");
    assert!(!shown.contains("+200"), "one page at a time: {shown}");
    tmux.keys("ada", &["End"]);
    let end = tmux
        .wait("ada", "the diff's end", |s| s.contains("+200"))
        .await;
    assert!(!end.contains("+hi"), "{end}");
    tmux.keys("ada", &["PageUp"]);
    tmux.wait("ada", "a page up", |s| !s.contains("+200")).await;
    tmux.keys("ada", &["Home"]);
    tmux.wait("ada", "the diff's start", |s| s.contains("+hi"))
        .await;
    tmux.keys("ada", &["Escape"]);
    // The chat again, with the reply's line as it was (a screen read while
    // the view's title is gone but its body still shows would not have it).
    tmux.wait("ada", "the view closed, the reply's line back", |s| {
        !s.contains(" since auto-") && s.contains(CHANGED)
    })
    .await;

    // Someone who joins later, in a narrow window, sees a line under the
    // newest turn's reply: what changed since that turn began, asked now
    // (so with the change made after it); and the view fits.
    tmux.start_sized("bob", &client_env(dir.path(), "bob"), &args, (40, 12));
    tmux.wait("bob", "the reply's line", |s| {
        s.contains("changed 2 files (+201 −0) · /diff")
    })
    .await;
    enter(&tmux, "bob", "/diff");
    tmux.wait("bob", "the diff view, narrow", |s| {
        s.contains("since auto-") && s.contains("diff --git a/a.txt")
    })
    .await;
    tmux.keys("bob", &["End"]);
    tmux.wait("bob", "the diff's end, narrow", |s| s.contains("+200"))
        .await;
    tmux.keys("bob", &["Escape"]);
    let after = tmux
        .wait("bob", "the view closed", |s| !s.contains("since auto-"))
        .await;
    assert!(!after.contains("EXITED"), "duet ended: {after}");
    assert!(!tmux.screen("ada").contains("EXITED"));
}
