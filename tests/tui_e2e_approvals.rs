//! End to end, as people use it: the real binary in tmux on a real
//! backend, two people in a room whose policy is `ask`. The agent's
//! command waits, and both are asked with the command in full; one
//! approves and its output reaches both; the next one is denied and both
//! read who denied it. The fake model writes the `<run>`s. Needs tmux.

mod agent_support;
mod common;

use agent_support::{FakeModel, Script};
use common::Server;
use common::tmux::Tmux;

#[tokio::test]
async fn an_approved_command_runs_for_both_and_a_denied_one_says_who_denied_it() {
    // The output differs from the command, so that it shows only if it ran.
    let model = FakeModel::start(vec![
        Script::Stream(vec![
            "Checking first. ".into(),
            "<run>echo approved-$((6*7))</run>".into(),
        ]),
        Script::Stream(vec![
            "Trying again. ".into(),
            "<run>echo never-$((6*7))</run>".into(),
        ]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(
        data.path(),
        &["--ai-url", &model.url, "--ai-model", "fake-model"],
    )
    .await;
    let room = "approvals-room";
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_pair(dir.path(), &server.url(""), room, ["ada", "bob"])
        .await;

    tmux.type_text("ada", "/policy ask");
    tmux.keys("ada", &["Enter"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the policy in the status bar", |s| {
            s.contains("policy ask")
        })
        .await;
    }

    tmux.type_text("ada", "please check");
    tmux.keys("ada", &["Enter"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the approval question", |s| {
            s.contains("The agent asks to run") && s.contains("echo approved-$((6*7))")
        })
        .await;
    }
    tmux.keys("bob", &["y"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the approved command's output", |s| {
            s.contains("approved-42") && !s.contains("The agent asks to run")
        })
        .await;
    }

    tmux.type_text("ada", "try again");
    tmux.keys("ada", &["Enter"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the second question", |s| {
            s.contains("The agent asks to run") && s.contains("echo never-$((6*7))")
        })
        .await;
    }
    tmux.keys("ada", &["n"]);
    for who in ["ada", "bob"] {
        let screen = tmux
            .wait(who, "who denied it, in the reply", |s| {
                s.contains("denied by ada") && !s.contains("The agent asks to run")
            })
            .await;
        // The turn ended with its reply: the denied command never ran.
        assert!(!screen.contains("never-42"), "{screen}");
    }
}
