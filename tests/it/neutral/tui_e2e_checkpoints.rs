//! End to end, as people use it: the real binary in tmux on a real
//! backend. The agent's turn deletes a file (the fake model asks to);
//! `/undo` asks first, saying what is lost, and `y` brings the file back,
//! with the restore in both people's timelines. Needs tmux.

use crate::common::Server;
use crate::common::agent_support;
use crate::common::apps::exec_with;
use crate::common::tmux::Tmux;
use serde_json::json;

/// Runs `cmd` in `room` as `setup`; its stdout.
async fn exec(server: &Server, room: &str, cmd: &str) -> String {
    let result = exec_with(server, room, json!({ "cmd": cmd, "userId": "setup" })).await;
    result["stdout"].as_str().unwrap_or("").to_string()
}

#[tokio::test]
async fn undo_brings_back_the_file_the_agents_turn_deleted() {
    use agent_support::{FakeModel, Script};
    let model = FakeModel::start(vec![Script::Stream(vec![
        "Deleting it as asked. ".into(),
        "<run>rm notes.txt</run>".into(),
    ])])
    .await;
    let (server, _data) = Server::fresh_with(&model.one_round_args()).await;
    let room = "undo-room";
    exec(&server, room, "printf 'our work' > notes.txt").await;

    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_pair(dir.path(), &server.url(""), room, ["ada", "bob"])
        .await;
    tmux.type_text("ada", "please delete notes.txt");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the agent's command ran", |s| {
        s.contains("╭ $ rm notes.txt") && s.contains("Deleting it as asked.")
    })
    .await;
    // The reply's `<run>` box draws as it streams, before the command runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !exec(&server, room, "ls").await.is_empty() {
        assert!(std::time::Instant::now() < deadline, "the turn deleted it");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    tmux.type_text("ada", "/undo");
    tmux.keys("ada", &["Enter"]);
    let asked = tmux
        .wait("ada", "the question before the undo", |s| {
            s.contains("Undo: restore checkpoint auto-") && s.contains("Lost:")
        })
        .await;
    assert!(
        asked.contains("every change to /workspace since"),
        "{asked}"
    );
    assert_eq!(
        exec(&server, room, "ls").await,
        "",
        "nothing is restored before the answer"
    );
    tmux.keys("ada", &["y"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the restore in the timeline", |s| {
            s.contains("ada restored checkpoint auto-")
        })
        .await;
    }
    assert_eq!(exec(&server, room, "cat notes.txt").await, "our work");
}
