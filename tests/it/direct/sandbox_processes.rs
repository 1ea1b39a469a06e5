//! The sandbox's background processes and ports, driven through its
//! library handle (the server's path to them), with the real helper.

use duet::sandbox::local::{Limits, RoomSandbox, SandboxPlace};
use duet::sandbox::{ExecSpec, ProcEvent, ProcEvents, ProcSignal, Sandbox, SandboxError};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn sandbox(dir: &std::path::Path, room: &str, limits: Limits) -> RoomSandbox {
    crate::common::use_built_helper();
    RoomSandbox::new(
        SandboxPlace::own(
            room,
            duet::sandbox::local::workspace_dir(dir, room),
            duet::sandbox::local::room_uid(dir, room.len() as u32 + 11),
        ),
        Arc::new(limits),
    )
}

/// Everything a process said until it ended, and how it ended.
async fn until_exit(events: &mut ProcEvents) -> (String, String, Option<i32>, Option<String>) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("the process ends")
            .expect("an exit comes before the end");
        match event {
            ProcEvent::Output {
                stderr: false,
                bytes,
            } => out.extend(bytes),
            ProcEvent::Output {
                stderr: true,
                bytes,
            } => err.extend(bytes),
            ProcEvent::Exit(code, error) => {
                let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
                return (text(out), text(err), code, error);
            }
        }
    }
}

/// Output until `needle` shows on stdout.
async fn until_output(events: &mut ProcEvents, needle: &str) -> String {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !String::from_utf8_lossy(&out).contains(needle) {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(ProcEvent::Output { bytes, .. })) => out.extend(bytes),
            other => panic!("no {needle:?} before {other:?}; had {out:?}"),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn run(sb: &RoomSandbox, cmd: &str) -> duet::sandbox::ExecOutcome {
    let spec = ExecSpec {
        cmd: cmd.into(),
        timeout: Duration::from_secs(30),
        ..ExecSpec::default()
    };
    RoomSandbox::exec(sb, "x".into(), spec, Box::new(|_| {}))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_process_runs_beside_commands_in_the_workspace_and_reports_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "bg-runs", Limits::default());
    run(&sb, "echo from-a-command > note.txt; cd /tmp; export X=1").await;
    let mut events = sb
        .process_start(
            "p1".into(),
            "pwd; echo \"x=$X\"; cat note.txt; echo oops >&2; exit 3".into(),
        )
        .await
        .unwrap();
    let (out, err, code, error) = until_exit(&mut events).await;
    assert_eq!(
        out, "/workspace\nx=\nfrom-a-command\n",
        "in /workspace, not the shell's directory or exports"
    );
    assert_eq!(err, "oops\n");
    assert_eq!((code, error), (Some(3), None));
    assert!(!sb.busy(), "an ended process holds nothing");
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn a_process_outlives_an_interrupted_command_and_a_signal_ends_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "bg-signal", Limits::default());
    let mut sleeper = sb
        .process_start("p1".into(), "sleep 300 & echo started; wait".into())
        .await
        .unwrap();
    until_output(&mut sleeper, "started").await;
    assert!(sb.busy(), "a running process keeps the room busy");
    // A command that is interrupted kills what it started, not the process.
    let spec = ExecSpec {
        cmd: "sleep 30".into(),
        timeout: Duration::from_millis(300),
        ..ExecSpec::default()
    };
    let timed_out = RoomSandbox::exec(&sb, "x".into(), spec, Box::new(|_| {}))
        .await
        .unwrap();
    assert!(timed_out.timed_out);
    // Living ones only: the killed command's sleep may not be reaped yet.
    let living = "ps -o stat= -C sleep | grep -vc Z || true";
    let out = run(&sb, living).await;
    assert_eq!(out.stdout.trim(), "1", "the process's sleep still runs");
    sb.process_signal("p1".into(), ProcSignal::Term);
    let (_, _, code, _) = until_exit(&mut sleeper).await;
    assert_eq!(code, Some(143));
    // Its group went with it (a signalled sleep may take a moment to go).
    let mut left = String::new();
    for _ in 0..50 {
        left = run(&sb, living).await.stdout.trim().to_string();
        if left == "0" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, "0", "its group went with it");
    // One that ignores TERM needs KILL.
    let mut stubborn = sb
        .process_start(
            "p2".into(),
            "trap '' TERM; echo ready; while :; do sleep 1; done".into(),
        )
        .await
        .unwrap();
    until_output(&mut stubborn, "ready").await;
    sb.process_signal("p2".into(), ProcSignal::Term);
    tokio::time::sleep(Duration::from_millis(300)).await;
    sb.process_signal("p2".into(), ProcSignal::Kill);
    let (_, _, code, _) = until_exit(&mut stubborn).await;
    assert_eq!(code, Some(137));
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn a_running_process_keeps_the_sandbox_from_its_idle_stop() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        idle_stop: Duration::from_secs(1),
        ..Limits::default()
    };
    let sb = sandbox(dir.path(), "bg-idle", limits);
    let mut events = sb
        .process_start("p1".into(), "echo up; sleep 300".into())
        .await
        .unwrap();
    until_output(&mut events, "up").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(100), events.recv())
            .await
            .is_err(),
        "the process still runs after three idle periods"
    );
    sb.destroy().await.unwrap();
    let (_, _, code, error) = until_exit(&mut events).await;
    assert_eq!(code, None, "destroying the sandbox ends it");
    assert!(error.is_some());
}

/// Waits until the sandbox says `port` listens (or not).
async fn until_listening(ports: &mut tokio::sync::watch::Receiver<Vec<u16>>, port: u16, yes: bool) {
    tokio::time::timeout(
        Duration::from_secs(30),
        ports.wait_for(|p| p.contains(&port) == yes),
    )
    .await
    .expect("the ports change in time")
    .expect("the sandbox reports its ports");
}

#[tokio::test]
async fn a_listening_port_is_seen_and_reached_and_the_hosts_is_not() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspaces/bg-ports")).unwrap();
    let sb = sandbox(dir.path(), "bg-ports", Limits::default());
    // A service on the host's loopback, on a port the sandbox will not use.
    let host = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host_port = host.local_addr().unwrap().port();
    assert_eq!(
        sb.port_connect(8000).await.unwrap_err(),
        SandboxError::NotListening(8000),
        "no sandbox runs yet"
    );
    run(&sb, "echo 'hello from the sandbox' > index.txt").await;
    let mut ports = Sandbox::ports(&sb);
    let mut server = sb
        .process_start(
            "p1".into(),
            "exec python3 -m http.server 8000 --bind 127.0.0.1".into(),
        )
        .await
        .unwrap();
    until_listening(&mut ports, 8000, true).await;
    let mut stream = sb.port_connect(8000).await.unwrap();
    stream
        .write_all(b"GET /index.txt HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    assert!(answer.ends_with("hello from the sandbox\n"), "{answer}");
    assert_eq!(
        sb.port_connect(host_port).await.unwrap_err(),
        SandboxError::NotListening(host_port),
        "the host's loopback is not the sandbox's"
    );
    sb.process_signal("p1".into(), ProcSignal::Term);
    until_exit(&mut server).await;
    until_listening(&mut ports, 8000, false).await;
    assert_eq!(
        sb.port_connect(8000).await.unwrap_err(),
        SandboxError::NotListening(8000)
    );
    sb.destroy().await.unwrap();
    drop(host);
}
