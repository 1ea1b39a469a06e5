//! End to end, as people read it: one question, and the agent works in
//! rounds: it runs a failing test, edits the code with `edit_file`, runs
//! the test again and says it passes. The real binary in tmux shows every
//! round's output, the edit's line in the reply and its record in the
//! timeline. Needs tmux.

use crate::common::agent_support::{FakeModel, Script};
use crate::common::tmux::{Tmux, client_env};
use crate::common::{Server, http};
use serde_json::json;

const TEST_SH: &str = "out=$(bash calc.sh); if [ \"$out\" = 4 ]; then echo PASS; else echo \"FAIL: 2 + 2 gave $out\"; exit 1; fi\n";

/// A tool call of a scripted answer.
fn call(name: &str, args: serde_json::Value) -> (String, Vec<String>) {
    (name.to_string(), vec![args.to_string()])
}

#[tokio::test]
async fn the_tui_shows_each_rounds_output_and_the_agents_edit() {
    let model = FakeModel::start(vec![
        Script::Tools(
            vec!["Running the test.".into()],
            vec![call("run", json!({"cmd": "bash test.sh"}))],
        ),
        Script::Tools(
            vec!["It subtracts; fixing it.".into()],
            vec![
                call(
                    "edit_file",
                    json!({"path": "calc.sh", "old": "2 - 2", "new": "2 + 2"}),
                ),
                call("run", json!({"cmd": "bash test.sh"})),
            ],
        ),
        Script::Stream(vec!["All green now.".into()]),
    ])
    .await;
    let (server, _data) = Server::fresh_with(&model.server_args()).await;
    let room = "loop-tui";
    let mut req = http()
        .post(server.url(&format!("/api/rooms/{room}/sandbox/exec")))
        .json(&json!({"cmd": format!("printf 'echo $((2 - 2))\\n' > calc.sh; printf '%s' '{TEST_SH}' > test.sh")}));
    if let Some(token) = &server.token {
        req = req.bearer_auth(token);
    }
    assert_eq!(req.send().await.unwrap().status(), 200);

    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_sized(
        "ada",
        &client_env(dir.path(), "ada"),
        &format!("--server {} --room {room}", server.url("")),
        (110, 60),
    );
    // At 110 columns the status bar keeps the room's model and shortens
    // the connection to its symbol: the presence count says it joined.
    tmux.wait("ada", "joined", |s| s.contains("ada ● · 1 here"))
        .await;
    tmux.type_text("ada", "make the test pass");
    tmux.keys("ada", &["Enter"]);
    let screen = tmux
        .wait("ada", "the rounds, the edit and the answer", |s| {
            s.contains("All green now.")
                && s.contains("Edited calc.sh (+1 -1 lines)")
                && s.contains("FAIL: 2 + 2 gave 0")
                && s.contains("PASS")
                && s.contains("the agent edited /workspace/calc.sh (+1 -1 lines)")
        })
        .await;
    // Each round's command shows as a block, and no tag is left.
    assert_eq!(screen.matches("$ bash test.sh").count(), 2, "{screen}");
    assert!(!screen.contains("<run>"), "{screen}");
    // In the chat's column (the side panes show the commands too).
    let chat: String = screen
        .lines()
        .map(|l| l.chars().take(62).collect::<String>() + "\n")
        .collect();
    let order: Vec<usize> = [
        "Running the test.",
        "FAIL: 2 + 2",
        "Edited calc.sh",
        "PASS",
        "All green now.",
    ]
    .iter()
    .map(|t| chat.find(t).unwrap_or_else(|| panic!("{t} not in {chat}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{chat}");
}
