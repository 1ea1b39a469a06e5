//! The App while its connection is down and when it is back: one toast
//! says why in words a person reads, toasts about the connection go when
//! it returns, who is here is marked as of when it dropped, and messages
//! written meanwhile show as queued until they go. Update and snapshot
//! tests (insta, fixed clock).

use crate::common::tui_fixtures::*;
use duet::client::http::StatusError;
use duet::client::rpc::{RoomOp, RpcError};
use duet::client::socket::{ConnState, SocketEvent};
use duet::tui::app::{App, Effect, Msg};

const WHY: &str = "Can't reach the server at 127.0.0.1:7878 (connection refused)";

fn conn(state: ConnState) -> Msg {
    Msg::Socket(SocketEvent::State(state))
}

fn reconnecting(in_secs: u64) -> Msg {
    conn(ConnState::Reconnecting {
        in_secs,
        reason: WHY.into(),
    })
}

fn back() -> Msg {
    conn(ConnState::Connected { rtt_ms: Some(2) })
}

/// A room with two people, whose connection dropped five minutes in.
fn dropped() -> App {
    let mut app = app();
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    app.now_ms = T0 + 5 * 60_000;
    app.update(reconnecting(3));
    app
}

fn texts(app: &App) -> Vec<&str> {
    app.toasts.iter().map(|t| t.text.as_str()).collect()
}

/// The last line of a screen: the status bar.
fn status_bar(screen: &str) -> &str {
    screen.trim_end().lines().last().unwrap_or_default()
}

#[test]
fn one_toast_says_why_the_connection_is_down_and_goes_when_it_is_back() {
    let mut app = dropped();
    app.update(Msg::TransferDone(Ok("a note of its own".into())));
    assert_eq!(
        texts(&app),
        [
            "Can't reach the server at 127.0.0.1:7878 (connection refused); trying again in 3 s",
            "a note of its own"
        ]
    );
    // The countdown and the next attempt renew it; they do not stack.
    app.update(reconnecting(2));
    app.update(conn(ConnState::Connecting));
    assert_eq!(
        texts(&app),
        [
            "Can't reach the server at 127.0.0.1:7878 (connection refused); retrying…",
            "a note of its own"
        ]
    );
    assert!(app.toasts[0].error);
    // A command refused meanwhile says so, and goes with it.
    submit(&mut app, "!make");
    app.update(answer(
        RoomOp::Exec("make".into()),
        Err(RpcError::NotSent(WHY.into())),
    ));
    assert_eq!(
        texts(&app)[2],
        "You are not connected: `make` was not run (it is back in the input)"
    );
    assert_eq!(app.composer.text(), "!make");
    app.update(back());
    assert_eq!(texts(&app), ["a note of its own"]);
    assert_eq!(app.presence_as_of(), None);
}

#[test]
fn the_same_reason_is_said_once_and_a_new_one_again() {
    let mut app = dropped();
    app.now_ms += duet::tui::app::ERROR_TOAST_MS;
    app.update(Msg::Tick);
    assert!(app.toasts.is_empty(), "it goes after a while");
    app.update(conn(ConnState::Connecting));
    app.update(reconnecting(5));
    assert!(app.toasts.is_empty(), "the same reason is not said again");
    app.update(conn(ConnState::Reconnecting {
        in_secs: 9,
        reason: "The connection to 127.0.0.1:7878 broke (timed out)".into(),
    }));
    assert_eq!(
        texts(&app),
        ["The connection to 127.0.0.1:7878 broke (timed out); trying again in 9 s"]
    );
}

#[test]
fn a_refused_token_is_said_as_a_sentence() {
    let mut app = app();
    let why =
        duet::client::explain::status(&StatusError::from_body(401, r#"{"error":"unauthorized"}"#));
    app.update(conn(ConnState::Offline(why)));
    assert_eq!(
        texts(&app),
        [
            "The server needs a valid token (401 Unauthorized: unauthorized): none was given, or it is wrong, revoked or expired; give one with --token or DUET_TOKEN"
        ]
    );
}

#[test]
fn a_busy_room_says_when_it_tries_again() {
    let mut app = app();
    let why = duet::client::explain::status(&StatusError::from_body(
        429,
        r#"{"error":"rate limited","retryAfterMs":3000}"#,
    ));
    app.update(conn(ConnState::Reconnecting {
        in_secs: 3,
        reason: why,
    }));
    assert_eq!(
        texts(&app),
        ["The room is busy (rate limited); trying again in 3 s"]
    );
}

#[test]
fn a_failure_the_server_answered_is_a_sentence_too() {
    let mut app = app();
    submit(&mut app, "!ls");
    app.update(answer(
        RoomOp::Exec("ls".into()),
        Err(RpcError::Failed(StatusError::from_body(
            429,
            r#"{"error":"rate limited","retryAfterMs":900}"#,
        ))),
    ));
    assert_eq!(
        texts(&app),
        [
            "`ls` was not run: The room is busy (rate limited); try again in a moment (it is back in the input)"
        ]
    );
}

#[test]
fn a_command_the_server_failed_on_midway_may_have_run_and_is_not_put_back() {
    let mut app = app();
    submit(&mut app, "!make deploy");
    app.update(answer(
        RoomOp::Exec("make deploy".into()),
        Err(RpcError::Failed(StatusError::from_body(
            500,
            r#"{"error":"the room stopped before answering"}"#,
        ))),
    ));
    let said = texts(&app);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("`make deploy` may have run: "),
        "{said:?}"
    );
    assert!(!said[0].contains("not run"), "{said:?}");
    // Not back in the input: Enter would run it a second time.
    assert!(app.composer.is_empty());
    // A sandbox still starting ran nothing: that one comes back.
    submit(&mut app, "!ls");
    app.update(answer(
        RoomOp::Exec("ls".into()),
        Err(RpcError::Failed(StatusError::from_body(
            503,
            r#"{"error":"the sandbox is starting"}"#,
        ))),
    ));
    assert_eq!(app.composer.text(), "!ls");
}

#[test]
fn who_is_here_is_marked_as_of_when_the_connection_dropped() {
    let mut app = dropped();
    assert_eq!(app.presence_as_of(), Some(T0 + 5 * 60_000));
    let narrow = render(&mut app, 80, 24);
    assert_eq!(
        status_bar(&narrow),
        " demo-room ◌ reconnecting in 3 s · 2 here (as of 10:05, offline): ada, bob"
    );
    // Still stale while it tries again, as of the same time (and the
    // toast saying why has gone by then: the column shows).
    app.now_ms += 60_000;
    app.update(Msg::Tick);
    app.update(conn(ConnState::Connecting));
    app.update(reconnecting(8));
    assert!(app.toasts.is_empty());
    assert_eq!(app.presence_as_of(), Some(T0 + 5 * 60_000));
    insta::assert_snapshot!("offline_120x40", render(&mut app, 120, 40));
    app.update(back());
    let fresh = render(&mut app, 80, 24);
    assert!(!fresh.contains("as of"), "{fresh}");
    assert!(status_bar(&fresh).contains("2 here"), "{fresh}");
}

#[test]
fn messages_written_offline_show_as_queued_until_they_go() {
    let mut app = dropped();
    // The App hands the message to the socket, which keeps it.
    assert_eq!(
        submit(&mut app, "are you there?"),
        vec![Effect::Call(RoomOp::to_agent("are you there?"))]
    );
    assert!(app.composer.is_empty());
    app.update(Msg::Socket(SocketEvent::Outbox(vec![RoomOp::to_agent(
        "are you there?",
    )])));
    submit(&mut app, "and this one");
    app.update(Msg::Socket(SocketEvent::Outbox(vec![
        RoomOp::to_agent("are you there?"),
        RoomOp::to_agent("and this one"),
    ])));
    assert_eq!(app.outbox, ["are you there?", "and this one"]);
    insta::assert_snapshot!("queued_80x24", render(&mut app, 80, 24));
    app.update(back());
    app.update(Msg::Socket(SocketEvent::Outbox(Vec::new())));
    let screen = render(&mut app, 80, 24);
    assert!(!screen.contains("queued"), "{screen}");
}

#[test]
fn the_rooms_address_stays_whole_at_80_columns_and_carries_no_token() {
    let mut app = app();
    app.session.server = "http://127.0.0.1:28493".into();
    app.session.backend = duet::client::join::Backend::Embedded { data_dir: None };
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    let screen = render(&mut app, 80, 24);
    assert_eq!(
        status_bar(&screen),
        " demo-room as ada ● · 2 here: ada, bob · join: 127.0.0.1:28493/demo-room"
    );
    // Wide enough, everything shows.
    let wide = render(&mut app, 160, 40);
    assert!(
        status_bar(&wide).contains("● connected 3 ms · 2 here · join: 127.0.0.1:28493/demo-room"),
        "{wide}"
    );
}

#[test]
fn a_moved_backend_moves_the_rooms_address() {
    let mut app = app();
    app.session.server = "http://127.0.0.1:28493".into();
    app.session.backend = duet::client::join::Backend::Embedded { data_dir: None };
    app.update(Msg::ServerMoved(Ok("http://127.0.0.1:28494".into())));
    assert_eq!(app.session.join_hint(), "127.0.0.1:28494/demo-room");
    assert_eq!(app.session.server, "http://127.0.0.1:28494");
}
