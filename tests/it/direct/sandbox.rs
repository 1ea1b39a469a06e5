//! The real sandbox, driven through its library handle (the server's path
//! to it), with the real `duet sandbox-init` helper.

use duet::sandbox::local::{Limits, RoomSandbox, SandboxPlace};
use duet::sandbox::{Chunk, ExecOutcome, ExecSpec, Sandbox};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn sandbox(dir: &std::path::Path, room: &str, limits: Limits) -> RoomSandbox {
    crate::common::use_built_helper();
    let workspace = duet::sandbox::local::workspace_dir(dir, room);
    RoomSandbox::new(
        SandboxPlace::own(
            room,
            workspace,
            duet::sandbox::local::room_uid(dir, room.len() as u32 + 7),
        ),
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
    sb.destroy().await.unwrap();
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
    sb.destroy().await.unwrap();
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
    sb.destroy().await.unwrap();
}
#[tokio::test]
async fn a_busy_or_stopped_shell_is_stopped_and_one_that_will_not_is_replaced() {
    use duet::sandbox::{RestartReason, ShellRestart};
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "wedge", Limits::default());
    run(&sb, "f() { echo fn; }; x=1").await;
    let out = run_with(&sb, "while :; do :; done", Duration::from_millis(300)).await;
    assert!(out.timed_out);
    assert_eq!((out.restart, out.error), (None, None));
    let out = run_with(&sb, "kill -STOP $$; echo after", Duration::from_millis(300)).await;
    assert!(out.timed_out);
    assert_eq!((out.stdout.as_str(), out.restart), ("", None));
    assert_eq!(run(&sb, "f; echo $x").await.stdout, "fn\n1\n");
    // A command that takes the stop signal's trap away leaves nothing but
    // a replacement.
    let out = run_with(
        &sb,
        "trap - URG; while :; do :; done",
        Duration::from_millis(300),
    )
    .await;
    assert!(out.timed_out);
    let replaced = ShellRestart {
        reason: RestartReason::Timeout,
        reset: false,
    };
    assert_eq!(out.restart, Some(replaced));
    assert!(out.error.unwrap_or_default().contains("replaced"));
    assert_eq!(run(&sb, "echo alive").await.stdout, "alive\n");
    let out = run(&sb, "exit 7").await;
    assert_eq!(out.exit_code, Some(7));
    assert_eq!(run(&sb, "pwd").await.stdout, "/workspace\n");
    sb.destroy().await.unwrap();
}
#[tokio::test]
async fn endless_output_is_capped_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "flood", Limits::default());
    let capped = |cmd: &str| ExecSpec {
        cmd: cmd.to_string(),
        timeout: Duration::from_secs(30),
        output_cap: 64 * 1024,
        ..ExecSpec::default()
    };
    let run_capped = |cmd: &str| sb.exec("x1".into(), capped(cmd), Box::new(|_| {}));
    let out = run_capped("yes").await.unwrap();
    assert!(out.truncated);
    assert_eq!(out.stdout.len(), 64 * 1024);
    let out = run_capped("head -c 100000 /dev/zero | tr '\\0' x")
        .await
        .unwrap();
    assert!(out.truncated, "a line with no newline is capped too");
    assert_eq!(run(&sb, "echo ok").await.stdout, "ok\n");
    sb.destroy().await.unwrap();
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
    sb.destroy().await.unwrap();
}
#[tokio::test]
async fn interrupt_stops_the_command_not_the_shell() {
    // As a backend started by `cmd &` in a script (CI's) or by nohup: it
    // ignores SIGINT and SIGHUP, and the room's shell must not inherit that.
    // SAFETY: setting a disposition; the other tests here expect the same.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "intr", Limits::default());
    run(&sb, "cd /tmp; trap 'echo mine' INT").await;
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
    // The shell lives on, with the person's own trap of SIGINT.
    assert_eq!(
        run(&sb, "pwd; trap -p INT").await.stdout,
        "/tmp\ntrap -- 'echo mine' SIGINT\n"
    );
    sb.destroy().await.unwrap();
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
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn reads_during_a_destroy_leave_no_disk_behind() {
    // A cleanup during an agent's turn destroys the sandbox while the turn
    // reads AGENTS.md: each read readies the workspace (mounting its disk),
    // and none may leave a mount that the destroy cannot release.
    let dir = tempfile::tempdir().unwrap();
    for round in 0..8 {
        let room = format!("race{round}");
        let sb = sandbox(dir.path(), &room, Limits::default());
        sb.write_file(
            "AGENTS.md".into(),
            duet::sandbox::files::whole("be brief\n"),
        )
        .await
        .unwrap();
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let sb = sb.clone();
                tokio::spawn(async move {
                    for _ in 0..4 {
                        let _ = sb.read_file("AGENTS.md".into()).await;
                    }
                })
            })
            .collect();
        sb.destroy().await.unwrap();
        for reader in readers {
            reader.await.unwrap();
        }
        // A read after the destroy may ready an empty workspace again; the
        // next destroy takes it away.
        sb.destroy().await.unwrap();
        assert!(!dir.path().join("workspaces").join(&room).exists());
    }
}

#[tokio::test]
async fn bombs_are_held_by_the_room_limits() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        processes: 64,
        memory_bytes: 128 * 1024 * 1024,
        disk_bytes: 64 * 1024 * 1024,
        ..Limits::default()
    };
    let sb = sandbox(dir.path(), "bombs", limits);
    let out = run_with(
        &sb,
        "bomb() { bomb | bomb & }; bomb; sleep 2; ps -e | wc -l",
        Duration::from_secs(8),
    )
    .await;
    eprintln!("fork bomb: {out:?}");
    // The bomb's background forks outlive its command and hold the room's
    // processes: the next bombs start in a fresh sandbox (destroy ends them).
    sb.destroy().await.unwrap();
    let out = run_with(
        &sb,
        "x=$(head -c 400000000 /dev/zero | tr '\\0' x); echo ${#x}; echo status $?",
        Duration::from_secs(20),
    )
    .await;
    eprintln!("memory bomb: {out:?}");
    assert!(!out.stdout.contains("400000000"), "{}", out.stdout);
    let out = run_with(
        &sb,
        "dd if=/dev/zero of=big bs=1M count=200 2>&1; echo status $?",
        Duration::from_secs(20),
    )
    .await;
    eprintln!("disk: {out:?}");
    assert!(
        out.stdout.contains("No space left") || out.stdout.contains("File too large"),
        "{}",
        out.stdout
    );
    assert_eq!(run(&sb, "rm -f big; echo fine").await.stdout, "fine\n");
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn escapes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "escape", Limits::default());
    let out = run(&sb, "unshare -Ur id 2>&1; echo $?").await;
    assert!(
        out.stdout.contains("Operation not permitted"),
        "{}",
        out.stdout
    );
    let out = run(
        &sb,
        "mkdir -p /tmp/m; mount -t tmpfs none /tmp/m 2>&1; echo $?",
    )
    .await;
    assert!(
        out.stdout.ends_with("32\n") || out.stdout.contains("permission denied"),
        "{}",
        out.stdout
    );
    let out = run(
        &sb,
        "dmesg 2>&1 | head -1; hostname x 2>&1; echo 1 > /proc/sys/kernel/hostname 2>&1; echo done",
    )
    .await;
    assert!(!out.stdout.contains("] "), "no kernel log: {}", out.stdout);
    assert!(out.stdout.contains("done"));
    let out = run(&sb, "python3 -c 'import ctypes,os; r=ctypes.CDLL(None).syscall(425,1,0); print(r, ctypes.get_errno())' 2>&1 || true").await;
    assert!(
        !out.stdout.starts_with('3') && !out.stdout.starts_with('4'),
        "io_uring_setup must fail: {}",
        out.stdout
    );
    let out = run(&sb, "ln /usr/bin/su su 2>&1; echo $?").await;
    assert!(
        !out.stdout.ends_with("0\n"),
        "hard link across file systems: {}",
        out.stdout
    );
    let out = run(&sb, "grep -E 'CapEff|NoNewPrivs' /proc/self/status").await;
    assert!(
        out.stdout.contains("0000000000000000") && out.stdout.contains("NoNewPrivs:\t1"),
        "{}",
        out.stdout
    );
    assert_eq!(run(&sb, "echo still here").await.stdout, "still here\n");
    sb.destroy().await.unwrap();
}

/// A host of the test's own, in a network namespace it makes, standing in
/// for the internet: answers every connection with one line.
struct OutsideHost {
    netns: String,
    veth: String,
    addr: String,
}

impl OutsideHost {
    fn start(tag: u8) -> OutsideHost {
        let netns = format!("duet-test-{}-{tag}", std::process::id());
        let veth = format!("dt{}h{tag}", std::process::id() % 100000);
        let peer = format!("dt{}p{tag}", std::process::id() % 100000);
        let addr = format!("198.18.{tag}.2");
        let ip = |args: &str| {
            let ok = std::process::Command::new("ip")
                .args(args.split_whitespace())
                .status()
                .unwrap();
            assert!(ok.success(), "ip {args}");
        };
        ip(&format!("netns add {netns}"));
        ip(&format!("link add {veth} type veth peer name {peer}"));
        ip(&format!("link set {peer} netns {netns}"));
        ip(&format!("addr add 198.18.{tag}.1/24 dev {veth}"));
        ip(&format!("link set {veth} up"));
        ip(&format!("-n {netns} addr add {addr}/24 dev {peer}"));
        ip(&format!("-n {netns} link set {peer} up"));
        ip(&format!("-n {netns} link set lo up"));
        let path = format!("/run/netns/{netns}");
        let bind = format!("{addr}:8080");
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let ns = std::fs::File::open(path).unwrap();
            nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            let listener = std::net::TcpListener::bind(bind).unwrap();
            ready_tx.send(()).unwrap();
            for mut conn in listener.incoming().flatten() {
                use std::io::Write;
                let _ = conn.write_all(b"hello from outside\n");
            }
        });
        ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        OutsideHost { netns, veth, addr }
    }
}

impl Drop for OutsideHost {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["link", "del", &self.veth])
            .status();
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.netns])
            .status();
    }
}

#[tokio::test]
async fn network_is_none_by_default_and_nat_reaches_outside_but_not_host_loopback() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: making a test network namespace needs root");
        return;
    }
    let outside = OutsideHost::start(7);
    let host_service = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = host_service.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let probe = format!(
        "for target in {}/8080 127.0.0.1/{port} localhost/{port}; do \
           if timeout 5 bash -c \"exec 3<>/dev/tcp/$target && head -1 <&3\" 2>/dev/null; then echo \"$target open\"; \
           else echo \"$target closed\"; fi; done",
        outside.addr
    );

    let sb = sandbox(dir.path(), "net-none", Limits::default());
    let out = run(&sb, &probe).await;
    assert_eq!(
        out.stdout,
        format!(
            "{}/8080 closed\n127.0.0.1/{port} closed\nlocalhost/{port} closed\n",
            outside.addr
        )
    );
    sb.destroy().await.unwrap();

    let limits = Limits {
        network: duet::sandbox::Network::Nat,
        ..Limits::default()
    };
    limits
        .check()
        .expect("pasta is installed (scripts/test installs passt)");
    let sb = sandbox(dir.path(), "net-nat", limits);
    let out = run(&sb, &probe).await;
    assert_eq!(
        out.stdout,
        format!(
            "hello from outside\n{}/8080 open\n127.0.0.1/{port} closed\nlocalhost/{port} closed\n",
            outside.addr
        ),
        "{}",
        out.stderr
    );
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn an_idle_sandbox_stops_and_its_files_stay() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        idle_stop: Duration::from_millis(400),
        ..Limits::default()
    };
    let sb = sandbox(dir.path(), "idle", limits);
    let first = run(&sb, "echo kept > f; sleep 1000 &").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let second = run(&sb, "cat f; ps -e -o comm= | grep -c sleep").await;
    assert_eq!(second.stdout, "kept\n0\n");
    assert_ne!(first.session_id, second.session_id, "a new sandbox");
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn results_say_where_the_next_command_runs_and_an_exit_starts_afresh() {
    use duet::sandbox::{RestartReason, ShellRestart};
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path(), "cwd", Limits::default());
    // A person's noclobber is theirs: the shell's own files are written.
    let out = run(&sb, "mkdir -p 'a b' && cd 'a b' && export KEEP=1; set -C").await;
    assert_eq!(out.cwd.as_deref(), Some("/workspace/a b"));
    assert_eq!(out.restart, None);
    // A command's own directory does not move the shell.
    let spec = ExecSpec {
        cmd: "pwd".into(),
        cwd: Some("/tmp".into()),
        ..ExecSpec::default()
    };
    let out = sb.exec("x2".into(), spec, Box::new(|_| {})).await.unwrap();
    assert_eq!(
        (out.stdout.as_str(), out.cwd.as_deref()),
        ("/tmp\n", Some("/workspace/a b"))
    );
    // A timeout leaves the shell where the command took it.
    let out = run_with(&sb, "cd /; sleep 10", Duration::from_millis(300)).await;
    assert_eq!((out.restart, out.cwd.as_deref()), (None, Some("/")));
    assert_eq!(run(&sb, "pwd").await.stdout, "/\n");
    // An exit starts afresh: /workspace, no exports.
    let out = run(&sb, "exit 3").await;
    let fresh = ShellRestart {
        reason: RestartReason::Exit,
        reset: true,
    };
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(
        (out.restart, out.cwd.as_deref()),
        (Some(fresh), Some("/workspace"))
    );
    assert!(out.error.unwrap_or_default().contains("/workspace"));
    assert_eq!(
        run(&sb, "pwd; echo \"[$KEEP]\"").await.stdout,
        "/workspace\n[]\n"
    );
    // A shell that would not stop is replaced where the last finished
    // command left it, unless that directory is gone: /workspace, truly.
    run(&sb, "mkdir /tmp/gone && cd /tmp/gone").await;
    let stuck = "rmdir /tmp/gone; trap - URG; while :; do :; done";
    let out = run_with(&sb, stuck, Duration::from_millis(300)).await;
    let kept = ShellRestart {
        reason: RestartReason::Timeout,
        reset: false,
    };
    assert_eq!(
        (out.restart, out.cwd.as_deref()),
        (Some(kept), Some("/workspace"))
    );
    assert_eq!(run(&sb, "pwd").await.stdout, "/workspace\n");
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn an_idle_sandbox_that_stops_tells_its_room() {
    use duet::sandbox::Sandbox;
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        idle_stop: Duration::from_millis(300),
        ..Limits::default()
    };
    let sb = sandbox(dir.path(), "idle-told", limits);
    run(&sb, "cd /tmp").await;
    tokio::time::timeout(Duration::from_secs(30), Sandbox::stopped(&sb))
        .await
        .expect("the idle sandbox stops and says so");
    // Started again by the next command: a fresh shell.
    let out = run(&sb, "pwd").await;
    assert_eq!(
        (out.stdout.as_str(), out.cwd.as_deref()),
        ("/workspace\n", Some("/workspace"))
    );
    sb.destroy().await.unwrap();
}

/// A room on a host folder (`duet --workspace DIR`): the folder itself is
/// its /workspace, the rest of the machine as hidden as ever; what the room
/// makes belongs to the folder's owner (as root; else to whoever runs the
/// server); its checkpoints live beside the room's own place, and a restore
/// rewrites the folder; a destroy (a cleanup) keeps the folder and its
/// files; a fork copies them into a room of its own.
#[tokio::test]
async fn a_room_on_a_host_folder_works_in_it_and_never_deletes_it() {
    on_a_host_folder(tempfile::tempdir().unwrap(), "fold").await;
}

/// The same with the folder on another file system than the data
/// directory (/dev/shm, where there is one): a restore cannot move the
/// old files aside, and deletes them in place, keeping the folder's mode.
#[tokio::test]
async fn a_room_on_a_folder_of_another_file_system_restores_in_place() {
    if !std::path::Path::new("/dev/shm").is_dir() {
        return;
    }
    on_a_host_folder(tempfile::tempdir_in("/dev/shm").unwrap(), "shm-fold").await;
}

/// `room`: a name of its own (its cgroups are named after it).
async fn on_a_host_folder(host: tempfile::TempDir, room: &str) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    crate::common::use_built_helper();
    let data = tempfile::tempdir().unwrap();
    let folder = host.path().join("app");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("kept.txt"), "ours").unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o750)).unwrap();
    // Someone else's folder: what the room makes must be theirs.
    let owner = crate::common::folder_of_someone_else(&folder);
    let home = duet::sandbox::local::workspace_dir(data.path(), room);
    let place = SandboxPlace::on_folder(
        room,
        folder.clone(),
        home.clone(),
        duet::sandbox::local::room_uid(data.path(), 21),
    );
    let sb = RoomSandbox::new(place, Arc::new(Limits::default()));

    let out = run(
        &sb,
        "touch made.txt; mkdir made; cat kept.txt; echo; ls /; cat /etc/hostname; ls /root /home 2>&1",
    )
    .await;
    assert_eq!(out.exit_code, Some(2), "{out:?}");
    assert!(out.stdout.starts_with("ours\n"), "{}", out.stdout);
    assert!(out.stdout.contains("workspace\n"), "{}", out.stdout);
    assert!(out.stdout.contains("sandbox\n"), "{}", out.stdout);
    assert_eq!(
        out.stdout.matches("No such file").count(),
        2,
        "{}",
        out.stdout
    );
    for made in ["made.txt", "made"] {
        let meta = std::fs::symlink_metadata(folder.join(made)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), owner, "{made}");
    }
    let out = run(&sb, "touch /usr/x 2>&1; touch /x 2>&1").await;
    assert_eq!(
        out.stdout.matches("Read-only file system").count(),
        2,
        "{}",
        out.stdout
    );

    // A checkpoint is kept in the data directory, not beside the folder;
    // a restore brings back what was deleted, in the folder itself.
    sb.checkpoint_create("c1".into()).await.unwrap();
    let mut checkpoints = home.into_os_string();
    checkpoints.push(".checkpoints");
    assert!(
        std::path::Path::new(&checkpoints)
            .join("c1/kept.txt")
            .exists()
    );
    let beside: Vec<_> = std::fs::read_dir(host.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(beside, ["app"], "nothing is made beside the folder");
    run(&sb, "rm kept.txt; echo new > new.txt").await;
    assert!(!folder.join("kept.txt").exists());
    sb.checkpoint_restore("c1".into()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(folder.join("kept.txt")).unwrap(),
        "ours"
    );
    assert!(!folder.join("new.txt").exists());
    let meta = std::fs::metadata(folder.join("made.txt")).unwrap();
    assert_eq!(
        (meta.uid(), meta.gid()),
        owner,
        "a restored file is the owner's"
    );
    assert_eq!(run(&sb, "cat kept.txt").await.stdout, "ours");
    let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o750, "a restore keeps the folder's mode");

    // A fork copies the folder into a room of its own.
    let source = sb.fork_source(None).await.unwrap();
    let fork = sandbox(data.path(), &format!("{room}-fork"), Limits::default());
    fork.fork_from(source).await.unwrap();
    assert_eq!(run(&fork, "cat kept.txt").await.stdout, "ours");
    fork.destroy().await.unwrap();

    // A cleanup stops the sandbox and forgets the checkpoints; the folder
    // and its files stay as they were, and the room goes on in it.
    sb.destroy().await.unwrap();
    assert!(!std::path::Path::new(&checkpoints).exists());
    let meta = std::fs::metadata(&folder).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o750);
    assert_eq!(meta.uid(), owner.0);
    assert_eq!(
        std::fs::read_to_string(folder.join("kept.txt")).unwrap(),
        "ours"
    );
    assert!(folder.join("made.txt").exists() && folder.join("made").is_dir());
    assert_eq!(run(&sb, "ls").await.stdout, "kept.txt\nmade\nmade.txt\n");
    sb.destroy().await.unwrap();
    assert!(folder.join("kept.txt").exists());
}
