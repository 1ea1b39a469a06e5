//! The real sandbox, driven through its library handle (the server's path
//! to it), with the real `duet sandbox-init` helper.

use duet::sandbox::{Chunk, ExecOutcome, ExecSpec, Limits, RoomSandbox, SandboxPlace};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn sandbox(dir: &std::path::Path, room: &str, limits: Limits) -> RoomSandbox {
    // SAFETY: set before any sandbox starts; every test sets the same value.
    unsafe { std::env::set_var("DUET_HELPER_EXE", env!("CARGO_BIN_EXE_duet")) };
    let workspace = duet::sandbox::workspace_dir(dir, room);
    RoomSandbox::new(
        SandboxPlace {
            room: room.to_string(),
            workspace,
            uid: duet::sandbox::room_uid(room.len() as u32 + 7),
        },
        Arc::new(limits),
    )
}

async fn run(sb: &RoomSandbox, cmd: &str) -> ExecOutcome {
    run_with(sb, cmd, Duration::from_secs(30)).await
}

async fn run_with(sb: &RoomSandbox, cmd: &str, timeout: Duration) -> ExecOutcome {
    let spec = ExecSpec {
        cmd: cmd.to_string(),
        timeout,
        ..ExecSpec::default()
    };
    sb.exec("x1".into(), spec, Box::new(|_| {}))
        .await
        .expect("the sandbox runs commands")
}

#[tokio::test]
async fn commands_share_a_persistent_shell() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "persist", Limits::default());
    let out = run(
        &sb,
        "echo hello; echo oops >&2; exit_code() { return 3; }; exit_code",
    )
    .await;
    assert_eq!(out.stdout, "hello\n");
    assert_eq!(out.stderr, "oops\n");
    assert_eq!(out.exit_code, Some(3));
    run(
        &sb,
        "mkdir -p sub && cd sub && export GREETING=hi && echo data > f.txt",
    )
    .await;
    let out = run(&sb, "pwd; echo $GREETING; cat f.txt").await;
    assert_eq!(out.stdout, "/workspace/sub\nhi\ndata\n");
    assert!(dir.path().join("workspaces/persist/sub/f.txt").exists());
    let out = run(&sb, "read line; echo \"[$line] $?\"").await;
    assert_eq!(out.stdout, "[] 1\n", "stdin is /dev/null");
}

#[tokio::test]
async fn output_streams_while_the_command_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "stream", Limits::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let spec = ExecSpec {
        cmd: "echo one; sleep 0.3; echo two >&2; printf three".into(),
        timeout: Duration::from_secs(10),
        ..ExecSpec::default()
    };
    let out = sb
        .exec(
            "x".into(),
            spec,
            Box::new(move |c| sink.lock().unwrap().push(c)),
        )
        .await
        .unwrap();
    assert_eq!(out.stdout, "one\nthree");
    let chunks = seen.lock().unwrap().clone();
    assert_eq!(chunks.first(), Some(&Chunk::Stdout("one\n".into())));
    assert!(chunks.contains(&Chunk::Stderr("two\n".into())));
}

#[tokio::test]
async fn a_timeout_kills_the_whole_tree_and_the_shell_survives() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "timeout", Limits::default());
    run(&sb, "cd /tmp && export KEEP=1").await;
    let out = run_with(
        &sb,
        "echo started; sleep 1000 & sleep 1000",
        Duration::from_millis(500),
    )
    .await;
    assert!(out.timed_out);
    assert_eq!(out.stdout, "started\n");
    let out = run(&sb, "pwd; echo $KEEP; ps -e -o comm= | grep -c sleep").await;
    assert_eq!(out.stdout, "/tmp\n1\n0\n");
}

#[tokio::test]
async fn a_busy_or_stopped_shell_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "wedge", Limits::default());
    let out = run_with(&sb, "while :; do :; done", Duration::from_millis(300)).await;
    assert!(out.timed_out);
    assert!(out.error.unwrap_or_default().contains("restarted"));
    let out = run_with(&sb, "kill -STOP $$", Duration::from_millis(300)).await;
    assert!(out.timed_out);
    assert_eq!(run(&sb, "echo alive").await.stdout, "alive\n");
    let out = run(&sb, "exit 7").await;
    assert_eq!(out.exit_code, Some(7));
    assert_eq!(run(&sb, "pwd").await.stdout, "/workspace\n");
}

#[tokio::test]
async fn endless_output_is_capped_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        output_cap: 64 * 1024,
        ..Limits::default()
    };
    let sb = sandbox(dir.path(), "flood", limits);
    let out = run(&sb, "yes").await;
    assert!(out.truncated);
    assert_eq!(out.stdout.len(), 64 * 1024);
    let out = run(&sb, "head -c 100000 /dev/zero | tr '\\0' x").await;
    assert!(out.truncated, "a line with no newline is capped too");
    assert_eq!(run(&sb, "echo ok").await.stdout, "ok\n");
}

#[tokio::test]
async fn the_sandbox_is_isolated() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret.txt"), "host secret").unwrap();
    let sb = sandbox(dir.path(), "iso", Limits::default());
    let out = run(&sb, "ls /; ls /root /home 2>&1; cat /etc/shadow 2>&1").await;
    assert!(!out.stdout.contains("secret"), "{}", out.stdout);
    assert!(out.stdout.contains("No such file"), "{}", out.stdout);
    let out = run(&sb, "touch /usr/x 2>&1; touch /etc/x 2>&1; touch /x 2>&1").await;
    assert_eq!(
        out.stdout.matches("Read-only file system").count(),
        3,
        "{}",
        out.stdout
    );
    let out = run(&sb, "cat /proc/1/environ | tr '\\0' '\\n'; env").await;
    assert!(!out.stdout.contains("CARGO"), "{}", out.stdout);
    let out = run(&sb, "ls /proc/self/fd").await;
    assert_eq!(
        out.stdout, "0\n1\n2\n3\n",
        "only 0-2 (and ls's own directory)"
    );
    let out = run(
        &sb,
        "exec 3<>/dev/tcp/127.0.0.1/22 && echo connected || echo refused",
    )
    .await;
    assert!(out.stdout.contains("refused"), "{}", out.stdout);
    let out = run(&sb, "ps -e -o pid= | wc -l").await;
    assert!(
        out.stdout.trim().parse::<u32>().unwrap() < 6,
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn interrupt_stops_the_command_not_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "intr", Limits::default());
    run(&sb, "cd /tmp").await;
    let spec = ExecSpec {
        cmd: "sleep 30".into(),
        timeout: Duration::from_secs(60),
        ..ExecSpec::default()
    };
    let pending = sb.exec("x9".into(), spec, Box::new(|_| {}));
    let task = tokio::spawn(pending);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!sb.interrupt(Some("other".into()), false).await);
    assert!(sb.interrupt(Some("x9".into()), false).await);
    let out = task.await.unwrap().unwrap();
    assert!(out.interrupted);
    assert_eq!(out.exit_code, Some(130));
    assert_eq!(run(&sb, "pwd").await.stdout, "/tmp\n");
}

#[tokio::test]
async fn destroy_deletes_the_workspace_and_background_processes() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "gone", Limits::default());
    run(
        &sb,
        "echo x > keep.txt; (setsid sleep 1000 &) ; nohup sleep 1000 >/dev/null 2>&1 &",
    )
    .await;
    assert!(dir.path().join("workspaces/gone/keep.txt").exists());
    sb.destroy().await.unwrap();
    assert!(!dir.path().join("workspaces/gone").exists());
    let out = run(&sb, "ls -A; ps -e -o comm= | grep -c sleep").await;
    assert_eq!(out.stdout, "0\n");
}
