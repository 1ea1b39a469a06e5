//! End to end, background processes as people use them in the TUI: the
//! real binary in tmux on a real `duet serve`. `/bg` starts a web server,
//! the status bar counts it, F4 lists it with its port's URL, Enter
//! follows its log live while a request reaches it through the preview,
//! `k` stops one's own at once and someone else's after a y/n. Needs tmux
//! (the CI script installs it).

use crate::common;
use crate::common::Server;
use crate::common::tmux::{Tmux, client_env};

/// The words of the view's row of process `id` (after the selection
/// mark), if it shows.
fn row(screen: &str, id: &str) -> Vec<String> {
    screen
        .lines()
        .map(|l| {
            // The view's rows start at its left border: what the chat pane
            // shows beside it (a clock's "10") is not part of them.
            let inside = l.split_once('│').map_or(l, |(_, rest)| rest);
            inside
                .trim_matches(|c| c == '│' || c == ' ')
                .trim_start_matches("▶ ")
        })
        .find(|l| l.starts_with(&format!("{id}  ")))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// The status bar: the last line of a screen.
fn status(screen: &str) -> &str {
    screen.lines().last().unwrap_or("")
}

#[tokio::test]
async fn bg_then_the_view_follows_a_log_and_stops_processes() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let url = server.url("");
    let room = "bg-room";
    tmux.start(
        "ann",
        &client_env(dir.path(), "ann"),
        &format!("--server {url} --room {room}"),
    );
    tmux.wait("ann", "the room joined", |s| status(s).contains("1 here"))
        .await;

    tmux.type_text("ann", "/bg python3 -m http.server 8000");
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the process counted and announced", |s| {
        status(s).contains("1 proc") && s.contains("ann started p1 (python3)")
    })
    .await;

    // The view: the process, and its port's URL once it listens.
    tmux.keys("ann", &["F4"]);
    // The preview's own origin (`*.localhost` on a loopback duet serve);
    // the worker without DUET_PREVIEW_HOST names its path route.
    let port = server.addr.rsplit(':').next().unwrap_or_default();
    let preview = match common::backend() {
        common::Backend::Serve => format!("http://8000-{room}.localhost:{port}/"),
        common::Backend::Worker => {
            format!("http://{}/api/rooms/{room}/ports/8000/", server.addr)
        }
    };
    let screen = tmux
        .wait("ann", "the process and its port in the view", |s| {
            s.contains("Processes · 1 running") && s.contains(&format!("8000  {preview}"))
        })
        .await;
    assert!(screen.contains("▶ p1  python3"), "selected: {screen}");
    assert!(
        row(&screen, "p1").starts_with(&words("p1 python3 running - ann")),
        "{screen}"
    );

    // Follow its log, then reach it through the preview: the request
    // shows in the log as it happens.
    tmux.keys("ann", &["Enter"]);
    tmux.wait("ann", "the log followed", |s| {
        s.contains("Log of p1 (python3) · following")
    })
    .await;
    let client = common::apps::client_for(&server, &preview);
    let (status_code, _) = common::answer(client.get(format!("{preview}?live=1"))).await;
    assert_eq!(status_code, 200);
    tmux.wait("ann", "the request in the live log", |s| {
        s.contains("\"GET /?live=1 HTTP/1.1\" 200")
    })
    .await;

    // Someone else's process: stopping it asks first.
    let (code, body) = server
        .post(
            &format!("/api/rooms/{room}/processes"),
            serde_json::json!({"cmd": "sleep 1000", "userId": "bob"}),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    tmux.wait("ann", "bob's process in the view", |s| {
        s.contains("Processes · 2 running") && row(s, "p2").starts_with(&words("p2 sleep running"))
    })
    .await;
    tmux.keys("ann", &["Down", "k"]);
    tmux.wait("ann", "the question", |s| {
        s.contains("Stop bob's process p2 `sleep 1000`?")
    })
    .await;
    tmux.keys("ann", &["y"]);
    tmux.wait("ann", "bob's process killed", |s| {
        row(s, "p2").starts_with(&words("p2 sleep killed 143 bob"))
    })
    .await;

    // One's own stops at once.
    tmux.keys("ann", &["Up", "k"]);
    let screen = tmux
        .wait("ann", "the web server killed", |s| {
            row(s, "p1").starts_with(&words("p1 python3 killed 143 ann"))
        })
        .await;
    assert!(
        !screen.contains("Stop your"),
        "no question for one's own: {screen}"
    );
    tmux.keys("ann", &["Escape"]);
    tmux.wait("ann", "nothing runs", |s| {
        !s.contains("Processes ·") && !status(s).contains("proc")
    })
    .await;
}
