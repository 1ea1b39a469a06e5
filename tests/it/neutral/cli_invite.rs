//! `duet invite`, `duet policy`, `duet approve` and the client's socket
//! against a real backend, as an owner and the people they invite use
//! them: an invite's join command and link, the list and a revocation, a
//! viewer's `duet exec` refused in the server's words and a writer's run,
//! a revoked invite's socket that stops trying and says why, a tokenless
//! server's refusal that says how to set a token, and the embedded
//! backend found as `duet exec` finds it.

use crate::common;
use crate::common::browser::Browser;
use crate::common::cli::{duet_with as duet, stderr, stdout};
use crate::common::tmux::Tmux;
use crate::common::{Server, next_matching};
use duet::client::socket::{self, ConnState, SocketCommand, SocketEvent, SocketParams};
use duet::protocol::{RoomRole, ServerFrame};
use serde_json::Value;
use std::process::{Command, Output};
use tokio::sync::mpsc;

const TOKEN: &str = "owner-secret";

/// The link `duet invite` printed after `duet join`, and its token.
fn joined_with(out: &Output) -> (String, String) {
    let text = stdout(out);
    let link = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("duet join "))
        .unwrap_or_else(|| panic!("no join command in {text:?}"))
        .to_string();
    let parsed = duet::client::join::parse_link(&link).expect("the link reads back");
    let token = parsed.token.expect("the link carries the invite's token");
    (link, token)
}

async fn server() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--token", TOKEN]).await;
    (server, dir)
}

#[tokio::test]
async fn an_invite_is_made_listed_used_and_revoked() {
    let (server, _dir) = server().await;
    let url = server.url("");
    let room = "invite-room";
    let owner = Some(TOKEN);

    let out = duet(
        &url,
        room,
        owner,
        &[
            "invite",
            "--role",
            "viewer",
            "--expires",
            "2h",
            "--name",
            "bob",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("Invite i"), "{text}");
    assert!(
        text.contains("a viewer named bob in room invite-room"),
        "{text}"
    );
    assert!(
        text.contains("(in 1h59m)") || text.contains("(in 2h00m)"),
        "{text}"
    );
    let (link, viewer_token) = joined_with(&out);
    assert!(viewer_token.starts_with("duet_inv_"), "{viewer_token}");
    assert!(text.contains(&format!("Link: {link}")), "{text}");
    assert!(link.ends_with("/invite-room"), "{link}");

    let writer = duet(&url, room, owner, &["invite", "--role", "writer"]);
    assert!(writer.status.success(), "{}", stderr(&writer));
    let (_, writer_token) = joined_with(&writer);

    // The list: both, no tokens.
    let out = duet(&url, room, owner, &["invite", "--list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["ID", "ROLE", "NAME", "EXPIRES"]
    );
    assert!(
        lines[1].contains("viewer") && lines[1].contains("bob"),
        "{table}"
    );
    assert!(lines[2].contains("writer"), "{table}");
    assert!(
        !table.contains("duet_inv_"),
        "no token in the list: {table}"
    );
    let json: Value =
        serde_json::from_slice(&duet(&url, room, owner, &["invite", "--list", "--json"]).stdout)
            .expect("--json prints JSON");
    let ids: Vec<&str> = json["invites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{json}");

    // The viewer may look, not run; the writer runs.
    let out = duet(
        &url,
        room,
        Some(&viewer_token),
        &["exec", "--", "echo", "hi"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("You are a viewer: a viewer may not run commands"),
        "{}",
        stderr(&out)
    );
    let out = duet(
        &url,
        room,
        Some(&writer_token),
        &["exec", "--", "echo", "hi"],
    );
    assert_eq!(stdout(&out), "hi\n", "{}", stderr(&out));
    // A writer may not invite.
    let out = duet(
        &url,
        room,
        Some(&writer_token),
        &["invite", "--role", "viewer"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("You are a writer"),
        "{}",
        stderr(&out)
    );

    // Revoked: the viewer's token stops working.
    let out = duet(&url, room, owner, &["invite", "--revoke", ids[0]]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with(&format!("revoked invite {}", ids[0])));
    let out = duet(&url, room, Some(&viewer_token), &["ls"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("401"), "{}", stderr(&out));
    let table = stdout(&duet(&url, room, owner, &["invite", "--list"]));
    assert!(!table.contains("bob"), "{table}");
    // An id the room does not have.
    let out = duet(&url, room, owner, &["invite", "--revoke", "i99"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no such invite"), "{}", stderr(&out));
}

#[tokio::test]
async fn a_revoked_invites_socket_stops_trying_and_says_why() {
    let (server, _dir) = server().await;
    let url = server.url("");
    let room = "revoke-room";
    let out = duet(&url, room, Some(TOKEN), &["invite", "--role", "viewer"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, token) = joined_with(&out);
    let (tx, mut events) = mpsc::unbounded_channel();
    let params = SocketParams {
        base: url.clone(),
        room: room.into(),
        name: "bob".into(),
        token: Some(token),
        connection_id: "c-bob".into(),
        deltas: true,
    };
    let (handle, _task) = socket::spawn(params, tx);
    let you = next_matching(
        &mut events,
        "who the room says we are",
        |e| matches!(e, SocketEvent::Frame(f) if matches!(**f, ServerFrame::You { .. })),
    )
    .await;
    let SocketEvent::Frame(frame) = you else {
        unreachable!()
    };
    let ServerFrame::You { role, name, .. } = *frame else {
        unreachable!()
    };
    assert_eq!((role, name.as_str()), (RoomRole::Viewer, "bob"));

    let id = stdout(&duet(&url, room, Some(TOKEN), &["invite", "--list"]))
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .expect("the invite is listed");
    let out = duet(&url, room, Some(TOKEN), &["invite", "--revoke", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let offline = next_matching(&mut events, "the socket going offline", |e| {
        matches!(e, SocketEvent::State(ConnState::Offline(_)))
    })
    .await;
    assert_eq!(
        offline,
        SocketEvent::State(ConnState::Offline(
            "Your invite to this room was revoked: ask the room's owner for a new link".into()
        ))
    );
    // It does not try again: what it is asked next is answered at once,
    // with no connection attempt in between.
    handle.send(SocketCommand::Call(duet::client::rpc::RoomOp::Exec(
        "ls".into(),
    )));
    loop {
        match events.recv().await.expect("the actor runs") {
            SocketEvent::Answer(answer) => {
                assert!(answer.result.is_err());
                break;
            }
            SocketEvent::State(state) => panic!("it tried again: {state:?}"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_server_without_a_token_says_how_to_set_one() {
    let (server, _dir) = Server::fresh().await;
    let out = duet(
        &server.url(""),
        "open-room",
        None,
        &["invite", "--role", "viewer"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "This server has no token, so everyone in it is an owner: start it with --token \
             (or DUET_TOKEN) to invite people with roles"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_expiry_or_role_is_a_usage_error() {
    let out = duet(
        "http://127.0.0.1:9",
        "r",
        None,
        &["invite", "--role", "viewer", "--expires", "1w"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("90s, 30m, 24h, 7d"),
        "{}",
        stderr(&out)
    );
    let out = duet(
        "http://127.0.0.1:9",
        "r",
        None,
        &["invite", "--role", "boss"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("viewer, writer or owner"),
        "{}",
        stderr(&out)
    );
    let out = duet("http://127.0.0.1:9", "r", None, &["invite"]);
    assert_eq!(out.status.code(), Some(2), "--role is needed");
}

#[tokio::test]
async fn the_policy_is_set_and_shown_and_an_unknown_approval_is_said() {
    let (server, _dir) = server().await;
    let url = server.url("");
    let room = "policy-room";
    let out = duet(&url, room, Some(TOKEN), &["policy"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("policy: auto"), "{}", stdout(&out));
    let out = duet(
        &url,
        room,
        Some(TOKEN),
        &["policy", "ask", "--allow", "ls, git status"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("policy: ask"), "{}", stdout(&out));
    let text = stdout(&duet(&url, room, Some(TOKEN), &["policy"]));
    assert!(
        text.starts_with("policy: ask (each agent's command waits"),
        "{text}"
    );
    assert!(text.contains("ls, git status"), "{text}");

    let out = duet(&url, room, Some(TOKEN), &["approve", "a99"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no such approval"),
        "{}",
        stderr(&out)
    );
    let out = duet(&url, room, Some(TOKEN), &["policy", "maybe"]);
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn the_embedded_backend_invites_too() {
    if common::only_duet_serve("the embedded backend (duet without --server)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_embedded(dir.path(), "ada", "local-room").await;
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_duet"))
            .args(args)
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("DUET_DATA_DIR", dir.path().join("shared"))
            .env_remove("DUET_SERVER")
            .env_remove("DUET_TOKEN")
            .output()
            .unwrap()
    };
    let out = run(&["invite", "--room", "local-room", "--role", "viewer"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (link, token) = joined_with(&out);
    let port = std::fs::read_to_string(dir.path().join("shared/duet.port")).unwrap();
    assert!(
        link.contains(port.trim().trim_start_matches("http://")),
        "{link} points at the embedded backend ({port})"
    );
    // Its viewer is refused a command, in the server's words.
    let out = run(&[
        "exec",
        "--server",
        port.trim(),
        "--room",
        "local-room",
        "--token",
        &token,
        "--",
        "ls",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("a viewer may not run commands"),
        "{}",
        stderr(&out)
    );
    tmux.keys("ada", &["C-c"]);
    tmux.keys("ada", &["C-c"]);
    tmux.wait("ada", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
}

/// The browser link `duet invite --web` printed (`URL/r/ROOM#token=…`).
fn web_link_of(out: &Output) -> String {
    let text = stdout(out);
    text.lines()
        .map(str::trim)
        .find(|l| l.contains("/r/") && l.contains("#token="))
        .unwrap_or_else(|| panic!("no browser link in {text:?}"))
        .to_string()
}

#[tokio::test]
async fn a_web_invite_prints_a_browser_link_to_the_page() {
    let (server, _dir) = server().await;
    let url = server.url("");
    let url = url.trim_end_matches('/');
    let room = "invite-web";
    let out = duet(
        url,
        room,
        Some(TOKEN),
        &["invite", "--role", "writer", "--web"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let link = web_link_of(&out);
    let prefix = format!("{url}/r/{room}#token=duet_inv_");
    assert!(link.starts_with(&prefix), "{link}");
    assert!(
        stdout(&out).contains("a writer in room invite-web"),
        "{}",
        stdout(&out)
    );
    // The part a browser sends is the page; the token works for the room.
    let (page, token) = link.split_once("#token=").unwrap();
    let res = common::http().get(page).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let (status, _) = common::answer(
        common::http()
            .post(format!("{url}/api/rooms/{room}/ticket"))
            .bearer_auth(token),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_tui_and_the_embedded_backend_give_browser_links() {
    if common::only_duet_serve("the embedded backend (duet without --server)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_embedded(dir.path(), "ada", "web-local").await;
    let port = std::fs::read_to_string(dir.path().join("shared/duet.port")).unwrap();
    let base = port.trim().trim_end_matches('/').to_string();
    let base = if base.starts_with("http") {
        base
    } else {
        format!("http://{base}")
    };
    // The TUI's `/invite viewer web` shows it.
    tmux.type_text("ada", "/invite viewer web");
    tmux.keys("ada", &["Enter"]);
    let expected = format!("{base}/r/web-local#token=duet_inv_");
    tmux.wait("ada", "the browser link", |s| s.contains(&expected))
        .await;
    // `duet invite --web` prints it, at the embedded backend's loopback address.
    let out = Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["invite", "--room", "web-local", "--role", "viewer", "--web"])
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("DUET_DATA_DIR", dir.path().join("shared"))
        .env_remove("DUET_SERVER")
        .env_remove("DUET_TOKEN")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let link = web_link_of(&out);
    assert!(link.starts_with(&expected), "{}", stdout(&out));
    // The link opens the room in a browser, beside Ada's TUI.
    let browser = Browser::start().await;
    browser.open(&link).await;
    browser.wait_text("#status", "connected").await;
    browser.wait_text("#people", "ada").await;
    tmux.wait("ada", "the page's viewer", |s| s.contains("2 here"))
        .await;
    // Esc closes the link's notice; a key right after an Esc would read
    // as Alt+key, so the next waits for it to close.
    tmux.keys("ada", &["Escape"]);
    tmux.wait("ada", "the notice closed", |s| !s.contains("#token="))
        .await;
    tmux.keys("ada", &["C-c"]);
    tmux.keys("ada", &["C-c"]);
    tmux.wait("ada", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
}
