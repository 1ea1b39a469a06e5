//! The token never appears in the server's log, at any level, whether it
//! came in a header or as `?token=` on a socket, right or wrong.

use crate::common;
use crate::common::{WAIT, Ws, answer, http};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

#[tokio::test]
async fn tokens_stay_out_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let token = "s3cret-token-never-logged";
    let (child, addr, log) = logged_server(dir.path(), &["--token", token], "trace").await;

    let url = |p: &str| format!("http://{addr}{p}");
    let (status, _) = answer(
        http()
            .post(url("/api/rooms/r/sandbox/exec"))
            .bearer_auth(token)
            .json(&serde_json::json!({"cmd":"echo hi"})),
    )
    .await;
    assert_eq!(status, 200);
    let wrong = format!("{token}-but-wrong");
    let (status, _) = answer(http().get(url("/api/rooms/r/messages")).bearer_auth(&wrong)).await;
    assert_eq!(status, 401);
    let ws = Ws::connect(&format!(
        "ws://{addr}/api/rooms/r/ws?user=ada&token={token}"
    ))
    .await;
    ws.close().await;
    let refused =
        tokio_tungstenite::connect_async(format!("ws://{addr}/agents/duet-agent/r?token={wrong}"))
            .await;
    assert!(refused.is_err());

    let log = stop(child, log).await;
    assert!(log.lines().count() > 5, "the trace log was written: {log}");
    assert!(
        !log.contains(token),
        "the token leaked into the log:\n{log}"
    );
}

#[tokio::test]
async fn the_data_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let (server, dir) = common::Server::fresh().await;
    let (status, _) = server
        .post(
            "/api/rooms/r/sandbox/exec",
            serde_json::json!({"cmd":"echo hi > f"}),
        )
        .await;
    assert_eq!(status, 200);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(dir.path()), 0o700);
    for name in ["duet.db", "duet.db-wal"] {
        assert_eq!(mode(&dir.path().join(name)), 0o600, "{name}");
    }
    // Every file of the data directory (quota images included) is the owner's alone.
    for entry in walk(dir.path()) {
        let m = mode(&entry);
        if entry.is_file() && !entry.starts_with(dir.path().join("workspaces")) {
            assert_eq!(m & 0o077, 0, "{} is {m:o}", entry.display());
        }
    }
    server.stop().await;
}

/// Files directly in `dir` and in `dir/workspaces` (not inside workspaces).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for d in [dir.to_path_buf(), dir.join("workspaces")] {
        if let Ok(entries) = std::fs::read_dir(&d) {
            out.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    out
}

#[tokio::test]
async fn serving_on_loopback_without_a_token_says_who_can_use_it() {
    let dir = tempfile::tempdir().unwrap();
    let (child, _addr, log) = logged_server(dir.path(), &[], "warn").await;
    let log = stop(child, log).await;
    assert!(log.contains("every user of this machine"), "{log}");
}

/// `duet serve` with `args` whose log (at `level`) the test reads: the
/// process, its address, and its whole log once it stops.
async fn logged_server(
    dir: &std::path::Path,
    args: &[&str],
    level: &str,
) -> (
    tokio::process::Child,
    String,
    tokio::task::JoinHandle<String>,
) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .args(args)
        .env_remove("DUET_TOKEN")
        .env("DUET_LOG", level)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(WAIT, stdout.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let addr = line
        .strip_prefix("duet: listening on http://")
        .unwrap()
        .to_string();
    let mut stderr = child.stderr.take().unwrap();
    let log = tokio::spawn(async move {
        let mut all = String::new();
        let _ = stderr.read_to_string(&mut all).await;
        all
    });
    (child, addr, log)
}

/// Stops a `logged_server` with SIGTERM and answers its whole log.
async fn stop(mut child: tokio::process::Child, log: tokio::task::JoinHandle<String>) -> String {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGTERM) };
    tokio::time::timeout(WAIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    log.await.unwrap()
}
