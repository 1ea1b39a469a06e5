//! End to end, the backend's comings and goings: a second `duet` on the
//! same data directory joins the first one's embedded backend (and so does
//! `duet exec`) and takes it over when the first leaves; after a backend
//! restart the view comes back without duplicates, and a message typed
//! while offline waits in the outbox and goes once. Needs tmux (the CI
//! script installs it).

use crate::common;
use crate::common::Server;
use crate::common::tmux::{Tmux, client_env, shared_client_env};
use std::path::Path;
use std::process::Command;

#[tokio::test]
async fn a_second_duet_joins_the_embedded_backend_and_so_does_exec() {
    if common::only_duet_serve("the embedded backend (duet without --server)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_embedded(dir.path(), "first", "local-room").await;
    let screen = tmux.screen("first");
    // The bar shows where the backend listens, never its token (which is
    // an owner's in every room): F6 gives others a link.
    let port = std::fs::read_to_string(dir.path().join("shared/duet.port")).unwrap();
    let token = std::fs::read_to_string(dir.path().join("shared/duet.token")).unwrap();
    let hint = format!(
        "join: {}/local-room",
        port.trim().trim_start_matches("http://")
    );
    assert!(!screen.contains(token.trim()), "{screen}");
    assert!(screen.contains(&hint), "{screen}");
    tmux.start(
        "second",
        &shared_client_env(dir.path(), "bob"),
        "--room local-room",
    );
    for who in ["first", "second"] {
        tmux.wait(who, "both clients", |s| s.contains("2 here"))
            .await;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_duet"))
        .args([
            "exec",
            "--room",
            "local-room",
            "--",
            "echo",
            "via-port-file",
        ])
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("DUET_DATA_DIR", dir.path().join("shared"))
        .env_remove("DUET_SERVER")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "via-port-file\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Its output, under a header that may cut the command to keep the badge.
    tmux.wait("second", "the command run through exec", |s| {
        s.contains("$ echo via") && s.lines().any(|l| l.contains("│via-port-file"))
    })
    .await;
    // Other users of the machine cannot reach in: the embedded backend has
    // a token of its own, kept where only this user reads it.
    let url = std::fs::read_to_string(dir.path().join("shared/duet.port")).unwrap();
    let (status, _) =
        common::answer(common::http().get(format!("{}/api/rooms/local-room/messages", url.trim())))
            .await;
    assert_eq!(status, 401, "a request without the token");
    let token = dir.path().join("shared/duet.token");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&token).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    // The backend logs to its file, never to the screen.
    let log = std::fs::read_to_string(dir.path().join("shared/duet.log")).unwrap();
    assert!(log.contains("embedded backend started"), "{log}");
    assert!(!tmux.screen("first").contains("INFO"));

    // The first duet leaves, taking its backend along (and says how to
    // come back): the second takes over with the same data directory, on
    // the same port, so the join hint others were given still works.
    tmux.keys("first", &["C-c"]);
    tmux.keys("first", &["C-c"]);
    tmux.wait("first", "a clean exit", |s| {
        s.contains(&format!(
            "Left room local-room. Back in: duet --data-dir {} --room local-room --name ada",
            dir.path().join("shared").display()
        )) && s.contains("EXITED 0")
    })
    .await;
    tmux.wait("second", "the backend taken over", |s| {
        s.contains("1 here") && s.contains("● connected") && s.contains(&hint)
    })
    .await;
    // The screen above can still be the one before the takeover (the
    // first duet's backend stopping): the port file comes with it.
    let port_file = dir.path().join("shared/duet.port");
    let moved = common::apps::wait_for("the port file of the backend taken over", || {
        let found = std::fs::read_to_string(&port_file).ok();
        async move { found }
    })
    .await;
    assert_eq!(moved, port, "the same port");
    // The port file may still be the first backend's: the second's start
    // is in the shared log once it serves.
    let log_file = dir.path().join("shared/duet.log");
    common::apps::wait_for("the backend taken over to start", || {
        let log = std::fs::read_to_string(&log_file).unwrap_or_default();
        async move { (log.matches("embedded backend started").count() >= 2).then_some(()) }
    })
    .await;
    tmux.wait("second", "connected to it", |s| s.contains("● connected"))
        .await;
    tmux.type_text("second", "!echo still-here");
    tmux.keys("second", &["Enter"]);
    tmux.wait("second", "a command on the new backend", |s| {
        s.contains("bob $ echo still")
            && s.lines().any(|l| l.contains("│still-here"))
            && s.lines().any(|l| l.contains("│via-port-file"))
    })
    .await;
    // The backend it took over stops with it, as it should (its room's
    // disk image unmounted).
    tmux.keys("second", &["C-c"]);
    tmux.keys("second", &["C-c"]);
    tmux.wait("second", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
}

/// The backend on a given port (so that a restart keeps the address).
async fn serve_on(port: u16, data: &Path) -> Server {
    Server::start_at(&format!("127.0.0.1:{port}"), data, &[]).await
}

/// Ada's `duet` in `room`, connected to a backend on a port of its own;
/// its data directory is kept for a restart on the same address.
struct Connected {
    port: u16,
    data: tempfile::TempDir,
    server: Server,
    tmux: Tmux,
    _home: tempfile::TempDir,
}

async fn ada_connected(room: &str) -> Connected {
    let port = common::free_port();
    let data = tempfile::tempdir().unwrap();
    let server = serve_on(port, data.path()).await;
    let home = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(home.path());
    tmux.start(
        "ada",
        &client_env(home.path(), "ada"),
        &format!("--server http://127.0.0.1:{port} --room {room}"),
    );
    tmux.wait("ada", "connected", |s| s.contains("● connected"))
        .await;
    Connected {
        port,
        data,
        server,
        tmux,
        _home: home,
    }
}

#[tokio::test]
async fn after_a_backend_restart_the_view_comes_back_without_duplicates() {
    let Connected {
        port,
        data,
        server,
        tmux,
        _home,
    } = ada_connected("again-room").await;
    tmux.type_text("ada", "said once");
    tmux.keys("ada", &["Enter"]);
    // Sent, not just typed: the input line no longer holds it.
    tmux.wait("ada", "the message", |s| {
        s.contains("said once") && !s.contains("› said once")
    })
    .await;
    server.stop().await;
    // Offline: why, in words; who was here, as of when.
    tmux.wait("ada", "reconnecting", |s| {
        s.contains("reconnecting in")
            && s.contains(&format!("Can't reach the server at 127.0.0.1:{port}"))
            && s.contains("1 here (as of ")
    })
    .await;
    tmux.type_text("ada", "typed while away");
    // Enter while offline: the message waits in the outbox, and says so.
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the message queued", |s| {
        s.contains("queued, sends when back online: typed while away")
            && !s.contains("› typed while away")
    })
    .await;
    let server = serve_on(port, data.path()).await;
    let screen = tmux
        .wait("ada", "connected again, the message sent", |s| {
            s.contains("● connected")
                && s.contains("  typed while away")
                && !s.contains("queued")
                && !s.contains("as of ")
                && !s.contains("Can't reach")
        })
        .await;
    assert_eq!(screen.matches("said once").count(), 1, "{screen}");
    assert_eq!(screen.matches("typed while away").count(), 1, "{screen}");
    server.stop().await;
}

#[tokio::test]
async fn quitting_while_offline_prints_the_messages_not_sent() {
    // The folders are bound too: they stay until the test ends.
    let Connected {
        server,
        tmux,
        data: _data,
        _home,
        ..
    } = ada_connected("away-room").await;
    server.stop().await;
    tmux.wait("ada", "reconnecting", |s| s.contains("reconnecting in"))
        .await;
    tmux.type_text("ada", "typed then left");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the message queued", |s| {
        s.contains("queued, sends when back online: typed then left")
    })
    .await;
    // The first Ctrl+C says what quitting leaves; the second quits, and
    // the message is printed whole where it stays.
    tmux.keys("ada", &["C-c"]);
    tmux.wait("ada", "the warning", |s| {
        s.contains("1 message is not sent yet (offline)")
    })
    .await;
    tmux.keys("ada", &["C-c"]);
    tmux.wait("ada", "the way out", |s| {
        s.contains("Left room away-room.")
            && s.contains("Not sent (the backend was out of reach):\ntyped then left")
            && s.contains("EXITED 0")
    })
    .await;
}
