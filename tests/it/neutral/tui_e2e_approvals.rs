//! End to end, as people use it: the real binary in tmux on a real
//! backend, two people in a room whose policy is `ask`. The agent's
//! command waits, and both are asked with the command in full; one
//! approves and its output reaches both; the next one is denied and both
//! read who denied it. A viewer who joined by an invite's link is not
//! asked (a toast says why the agent waits) and is refused a command in
//! the server's words; made a writer while the command waits, they are
//! asked at once, and their yes runs it. The fake model writes the
//! `<run>`s. Needs tmux.

use crate::common::Server;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::tmux::{Tmux, client_env};

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
    let (server, _data) = Server::fresh_with(&model.one_round_args()).await;
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

#[tokio::test]
async fn a_viewer_is_not_asked_until_the_owner_makes_them_a_writer() {
    let model = FakeModel::start(vec![Script::Stream(vec![
        "Checking. ".into(),
        "<run>echo approved-$((6*7))</run>".into(),
    ])])
    .await;
    let token = "owner-secret";
    let (server, _data) =
        Server::fresh_with(&[model.one_round_args(), vec!["--token", token]].concat()).await;
    let room = "viewer-room";
    let (status, invite) = server
        .post(
            &format!("/api/rooms/{room}/invites"),
            serde_json::json!({ "role": "viewer", "name": "cy" }),
        )
        .await;
    assert_eq!(status, 200, "{invite}");
    let link = invite["url"]
        .as_str()
        .expect("the invite's link")
        .to_string();
    let invite_id = invite["invite"]["id"].as_str().unwrap().to_string();

    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let mut ada = client_env(dir.path(), "ada");
    ada.push(("DUET_TOKEN", token.to_string()));
    tmux.start(
        "ada",
        &ada,
        &format!("--server {} --room {room}", server.url("")),
    );
    tmux.start("cy", &client_env(dir.path(), "cy"), &format!("join {link}"));
    // The presence column (cy's long link leaves no room for the count).
    for who in ["ada", "cy"] {
        tmux.wait(who, "both people present", |s| s.contains("Here 2"))
            .await;
    }
    tmux.wait("cy", "the viewer's role in the status bar", |s| {
        s.contains(" · viewer")
    })
    .await;
    tmux.type_text("cy", "!ls");
    tmux.keys("cy", &["Enter"]);
    tmux.wait("cy", "the refusal, before sending", |s| {
        s.contains("You are a viewer: a viewer may not run commands")
    })
    .await;
    tmux.keys("cy", &["C-u"]);

    tmux.type_text("ada", "/policy ask");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("cy", "the policy", |s| s.contains("policy ask"))
        .await;
    tmux.type_text("ada", "please check");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the owner asked", |s| {
        s.contains("The agent asks to run")
    })
    .await;
    let screen = tmux
        .wait("cy", "why the agent waits", |s| {
            s.contains("The agent waits for a writer or owner to approve")
        })
        .await;
    assert!(!screen.contains("The agent asks to run"), "{screen}");

    // Made a writer while it waits: cy is asked at once, and answers.
    let (status, changed) = server
        .post(
            &format!("/api/rooms/{room}/invites/{invite_id}/role"),
            serde_json::json!({ "role": "writer" }),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    tmux.wait("cy", "the question, now that cy may answer", |s| {
        s.contains("The agent asks to run") && s.contains(" · writer")
    })
    .await;
    tmux.keys("cy", &["y"]);
    for who in ["ada", "cy"] {
        tmux.wait(who, "the approved command's output", |s| {
            s.contains("approved-42") && !s.contains("The agent asks to run")
        })
        .await;
    }
    tmux.wait("ada", "who approved it", |s| s.contains("cy approved"))
        .await;
}
