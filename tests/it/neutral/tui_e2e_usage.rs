//! End to end, as people use it: the real binary in tmux on a real
//! backend that allows the models a, b and c. Both people read the room's
//! model in the status bar; an owner's `/model b` changes it for both and
//! the next turn asks the service for b; under each reply its usage
//! (`1 round · 3.1 k in · 280 out`), and in the status bar the session's
//! sum. The fake model reports the counts. Needs tmux.

use crate::common::Server;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::tmux::Tmux;

#[tokio::test]
async fn the_status_bar_names_the_model_and_sums_the_usage_shown_under_each_reply() {
    let model = FakeModel::start(vec![
        Script::Counted(vec!["First answer.".into()], 1_000, 100),
        Script::Counted(vec!["Second answer.".into()], 3_100, 280),
    ])
    .await;
    let mut args = model.server_args();
    args.extend(["--ai-models", "a,b,c"]);
    let (server, _data) = Server::fresh_with(&args).await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_pair(dir.path(), &server.url(""), "usage-room", ["ada", "bob"])
        .await;
    for who in ["ada", "bob"] {
        tmux.wait(who, "the default model in the status bar", |s| {
            s.contains("model a")
        })
        .await;
    }

    tmux.type_text("ada", "first question");
    tmux.keys("ada", &["Enter"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the usage under the first reply", |s| {
            s.contains("First answer.") && s.contains("1 round · 1.0 k in · 100 out")
        })
        .await;
    }

    tmux.type_text("ada", "/model b");
    tmux.keys("ada", &["Enter"]);
    for who in ["ada", "bob"] {
        tmux.wait(
            who,
            "the chosen model in the status bar and its record",
            |s| s.contains("model b") && s.contains("ada set the agent's model to b"),
        )
        .await;
    }

    tmux.type_text("bob", "second question");
    tmux.keys("bob", &["Enter"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the second reply's usage and the session's sum", |s| {
            s.contains("Second answer.")
                && s.contains("1 round · 3.1 k in · 280 out")
                && s.lines().any(|l| {
                    // The sum, long or (on a narrow bar) short: 4 480 tokens.
                    l.contains("model b")
                        && (l.contains("4.1 k in · 380 out") || l.contains("4.5 k tok"))
                })
        })
        .await;
    }
    let requests = model.requests();
    assert_eq!(requests[0].1["model"], "a");
    assert_eq!(requests[1].1["model"], "b");
}
