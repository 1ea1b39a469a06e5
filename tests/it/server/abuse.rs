//! Every abuse case of shared/SANDBOX.md, tried through the public API
//! (`POST /sandbox/exec`, the Files endpoints) of a real `duet serve`,
//! each asserting the outcome SANDBOX.md gives.

use crate::common::{Server, WAIT, answer, http};
use serde_json::{Value, json};
use std::time::Duration;

/// Runs `cmd` in `room`; returns the ExecResult.
async fn exec(server: &Server, room: &str, cmd: &str) -> Value {
    exec_for(server, room, cmd, 30_000).await
}

/// The answer may take the command's whole timeout (a `find /` on a loaded
/// machine), and then some.
async fn exec_for(server: &Server, room: &str, cmd: &str, timeout_ms: u64) -> Value {
    let (status, answer) = server
        .post_within(
            &format!("/api/rooms/{room}/sandbox/exec"),
            json!({"cmd": cmd, "timeoutMs": timeout_ms}),
            Duration::from_millis(timeout_ms) + WAIT,
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    answer["result"].clone()
}

fn stdout(result: &Value) -> String {
    result["stdout"].as_str().unwrap_or_default().to_string()
}

async fn limited_server(extra: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (Server::start(dir.path(), extra).await, dir)
}

async fn cleanup(server: &Server, room: &str) {
    let (status, body) = server
        .post(&format!("/api/rooms/{room}/cleanup"), json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn host_secrets_are_absent() {
    let (server, _dir) = Server::fresh().await;
    let r = exec(
        &server,
        "secrets",
        "cat /etc/shadow; ls /root; ls ~/.ssh; ls /home; echo end",
    )
    .await;
    let err = r["stderr"].as_str().unwrap();
    assert_eq!(err.matches("No such file or directory").count(), 4, "{err}");
    assert_eq!(stdout(&r), "end\n");
    cleanup(&server, "secrets").await;
}

#[tokio::test]
async fn the_root_file_system_is_read_only() {
    let (server, _dir) = Server::fresh().await;
    let r = exec(
        &server,
        "rofs",
        "for p in /usr/x /etc/x /x /bin/x; do touch $p 2>&1; done",
    )
    .await;
    assert_eq!(
        stdout(&r).matches("Read-only file system").count(),
        4,
        "{r}"
    );
    assert!(!std::path::Path::new("/usr/x").exists() && !std::path::Path::new("/x").exists());
    cleanup(&server, "rofs").await;
}

#[tokio::test]
async fn files_persist_and_stay_in_their_room() {
    let (server, _dir) = Server::fresh().await;
    exec(&server, "room-a", "echo only-in-a > secret.txt").await;
    assert_eq!(
        stdout(&exec(&server, "room-a", "cat secret.txt").await),
        "only-in-a\n"
    );
    // Only what is found is printed: a file grep cannot read (a host's
    // /etc may have one) is not a finding.
    let r = exec(&server, "room-b", "ls -A /workspace; find / -name secret.txt -not -path '/proc/*' 2>/dev/null; grep -rls only-in-a /tmp /etc /dev/shm 2>/dev/null; echo searched").await;
    assert_eq!(
        stdout(&r),
        "searched\n",
        "room b sees nothing of room a: {r}"
    );
    cleanup(&server, "room-a").await;
    cleanup(&server, "room-b").await;
}

#[tokio::test]
async fn host_processes_are_invisible() {
    let (server, _dir) = Server::fresh().await;
    let me = std::process::id();
    let r = exec(
        &server,
        "procs",
        &format!("kill -0 {me} 2>&1; kill -9 1 2>&1; ps -e -o pid= | wc -l"),
    )
    .await;
    let out = stdout(&r);
    assert!(out.contains("No such process"), "{out}");
    let count: u32 = out.lines().last().unwrap().trim().parse().unwrap();
    assert!(count <= 4, "only the sandbox's own processes: {out}");
    cleanup(&server, "procs").await;
}

#[tokio::test]
async fn no_server_environment_and_no_extra_descriptors() {
    let (server, _dir) = Server::fresh().await;
    let r = exec(
        &server,
        "env",
        "env; tr '\\0' '\\n' < /proc/1/environ; echo; ls /proc/self/fd",
    )
    .await;
    let out = stdout(&r);
    assert!(!out.contains("DUET_LOG") && !out.contains("CARGO"), "{out}");
    assert!(
        out.contains("HOME=/workspace") && out.contains("PATH="),
        "{out}"
    );
    assert!(
        out.ends_with("0\n1\n2\n3\n"),
        "only 0-2 and ls's own: {out}"
    );
    cleanup(&server, "env").await;
}

#[tokio::test]
async fn the_host_network_and_dns_are_out_of_reach() {
    let (server, _dir) = Server::fresh().await;
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    let cmd = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached || echo refused; \
         getent hosts example.com || echo no-dns; ip -o link 2>/dev/null | wc -l"
    );
    let r = exec(&server, "net", &cmd).await;
    assert!(stdout(&r).starts_with("refused\nno-dns\n"), "{r}");
    cleanup(&server, "net").await;
}

#[tokio::test]
async fn namespaces_mounts_and_setuid_tricks_fail() {
    let (server, _dir) = Server::fresh().await;
    let r = exec(
        &server,
        "tricks",
        "unshare -Ur id 2>&1; mount -t tmpfs none /tmp 2>&1; su -c id root 2>&1 </dev/null; \
         ln /usr/bin/su su 2>&1; id -u",
    )
    .await;
    let out = stdout(&r);
    assert!(
        out.contains("unshare failed: Operation not permitted"),
        "{out}"
    );
    assert!(!out.contains("uid=0"), "{out}");
    assert!(
        out.contains("Invalid cross-device link"),
        "hard link of a setuid binary: {out}"
    );
    assert_ne!(out.lines().last(), Some("0"));
    cleanup(&server, "tricks").await;
}

#[tokio::test]
async fn devices_kernel_log_sysctl_and_hostname_are_refused() {
    let (server, _dir) = Server::fresh().await;
    let r = exec(
        &server,
        "kernel",
        "ls /dev; dmesg >/dev/null 2>&1 || echo no-dmesg; echo 1 > /proc/sys/kernel/sysrq 2>/dev/null || echo no-sysctl; \
         hostname evil 2>/dev/null || echo no-hostname; ls /dev/sda /dev/mem 2>/dev/null | wc -l",
    )
    .await;
    let out = stdout(&r);
    assert!(out.contains("null") && !out.contains("sda"), "{out}");
    assert!(
        out.ends_with("no-dmesg\nno-sysctl\nno-hostname\n0\n"),
        "{out}"
    );
    cleanup(&server, "kernel").await;
}

#[tokio::test]
async fn a_planted_symlink_reads_and_writes_nothing_of_the_host() {
    let (server, _dir) = Server::fresh().await;
    exec(
        &server,
        "links",
        "ln -s / evil; ln -s /etc/hostname name; mkdir d",
    )
    .await;
    for path in [
        "evil/etc/hostname",
        "name",
        "sub%2F..%2F..%2Fetc%2Fhostname",
    ] {
        let (status, body) =
            answer(http().get(server.url(&format!("/api/rooms/links/files/{path}")))).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body["details"]["path"].is_array(), "{body}");
    }
    let put = http()
        .put(server.url("/api/rooms/links/files/evil/tmp/planted"))
        .body("x");
    assert_eq!(answer(put).await.0, 400);
    assert!(!std::path::Path::new("/tmp/planted").exists());
    cleanup(&server, "links").await;
}

#[tokio::test]
async fn files_move_in_and_out() {
    let (server, _dir) = Server::fresh().await;
    let put = http()
        .put(server.url("/api/rooms/files/files/src/deep/hello.txt"))
        .body("hello\n");
    let (status, body) = answer(put).await;
    assert_eq!(
        (status, body),
        (200, json!({"path": "src/deep/hello.txt", "size": 6}))
    );
    let r = exec(
        &server,
        "files",
        "cat src/deep/hello.txt; echo made > out.bin",
    )
    .await;
    assert_eq!(stdout(&r), "hello\n");
    let got = http()
        .get(server.url("/api/rooms/files/files/out.bin"))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.headers()["content-type"], "application/octet-stream");
    assert_eq!(got.bytes().await.unwrap(), "made\n");
    let missing = http()
        .get(server.url("/api/rooms/files/files/none.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    cleanup(&server, "files").await;
}

#[tokio::test]
async fn bombs_are_held_and_the_host_stays_responsive() {
    let (server, _dir) = limited_server(&["--processes", "64", "--memory-mb", "128"]).await;
    let fork_bomb = tokio::spawn({
        let url = server.url("/api/rooms/fork/sandbox/exec");
        async move {
            answer(
                http()
                    .post(url)
                    .json(&json!({"cmd": "b() { b | b & }; b; sleep 5", "timeoutMs": 6000})),
            )
            .await
        }
    });
    let memory_bomb = tokio::spawn({
        let url = server.url("/api/rooms/memory/sandbox/exec");
        async move {
            let cmd = "x=$(head -c 600000000 /dev/zero | tr '\\0' x); echo ${#x}";
            answer(
                http()
                    .post(url)
                    .json(&json!({"cmd": cmd, "timeoutMs": 20000})),
            )
            .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let r = exec(&server, "calm", "echo still answering").await;
    assert_eq!(stdout(&r), "still answering\n");
    let health = http().get(server.url("/health")).send().await.unwrap();
    assert_eq!(health.text().await.unwrap(), "ok");
    let (status, body) = tokio::time::timeout(WAIT, memory_bomb)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, 200);
    assert!(
        !body["result"]["stdout"]
            .as_str()
            .unwrap()
            .contains("600000000"),
        "{body}"
    );
    let (status, _) = tokio::time::timeout(WAIT, fork_bomb)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, 200);
    for room in ["fork", "memory", "calm"] {
        cleanup(&server, room).await;
    }
}

#[tokio::test]
async fn filling_tmp_and_the_disk_is_capped() {
    let (server, _dir) = limited_server(&["--disk-mb", "32", "--tmp-mb", "16"]).await;
    let r = exec(
        &server,
        "fill",
        "dd if=/dev/zero of=/tmp/big bs=1M count=64 2>&1 | head -1",
    )
    .await;
    assert!(stdout(&r).contains("No space left on device"), "{r}");
    let r = exec(
        &server,
        "fill",
        "dd if=/dev/zero of=big bs=1M count=64 2>&1 | head -1; rm -f big /tmp/big; echo ok",
    )
    .await;
    let out = stdout(&r);
    assert!(
        out.contains("No space left on device") || out.contains("File too large"),
        "{out}"
    );
    assert!(out.ends_with("ok\n"));
    cleanup(&server, "fill").await;
}

#[tokio::test]
async fn endless_output_is_capped_and_killed() {
    let (server, _dir) = limited_server(&["--output-cap", "100000"]).await;
    for cmd in ["yes", "while :; do printf xxxxxxxxxx; done"] {
        let r = exec(&server, "flood", cmd).await;
        assert_eq!(r["truncated"], true, "{cmd}");
        assert_eq!(r["stdout"].as_str().unwrap().len(), 100_000, "{cmd}");
    }
    assert_eq!(stdout(&exec(&server, "flood", "echo next").await), "next\n");
    cleanup(&server, "flood").await;
}

#[tokio::test]
async fn stubborn_commands_are_killed_at_their_timeout() {
    let (server, _dir) = Server::fresh().await;
    for cmd in [
        "sleep infinity",
        "trap '' TERM INT; sleep 1000",
        "kill -STOP $$",
    ] {
        let r = exec_for(&server, "stubborn", cmd, 500).await;
        assert_eq!(r["timedOut"], true, "{cmd}: {r}");
        assert_eq!(r["success"], false);
        assert_eq!(
            stdout(&exec(&server, "stubborn", "echo alive").await),
            "alive\n",
            "after {cmd}"
        );
    }
    cleanup(&server, "stubborn").await;
}

#[tokio::test]
async fn a_cpu_spin_meets_the_cpu_limit() {
    let (server, _dir) = limited_server(&["--cpu-secs", "1"]).await;
    let r = exec(
        &server,
        "spin",
        "bash -c 'while :; do :; done'; echo status $?",
    )
    .await;
    assert_eq!(r["timedOut"], Value::Null, "{r}");
    assert!(stdout(&r).contains("status 13"), "SIGXCPU or SIGKILL: {r}");
    cleanup(&server, "spin").await;
}

#[tokio::test]
async fn daemons_do_not_outlive_the_room() {
    let (server, dir) = Server::fresh().await;
    let r = exec(
        &server,
        "daemons",
        "setsid sleep 1000 & nohup sleep 1001 >/dev/null 2>&1 & (sleep 1002 &) ; echo x > f; id -u",
    )
    .await;
    let uid = stdout(&r).trim().to_string();
    let count = || {
        let out = std::process::Command::new("ps")
            .args(["-o", "pid=", "-u", &uid])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    if nix::unistd::geteuid().is_root() {
        assert!(count() >= 3, "the daemons run under the room's uid {uid}");
    }
    cleanup(&server, "daemons").await;
    let deadline = std::time::Instant::now() + WAIT;
    while nix::unistd::geteuid().is_root() && count() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    if nix::unistd::geteuid().is_root() {
        assert_eq!(count(), 0, "no process of the room's uid {uid} is left");
    }
    let left = std::fs::read_dir(dir.path().join("workspaces"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(left, 0, "no file of the room is left");
}

#[tokio::test]
async fn the_shell_protocol_holds() {
    let (server, _dir) = Server::fresh().await;
    let room = "protocol";
    let r = exec(
        &server,
        room,
        "printf '\\036deadbeef:0\\036\\n'; echo after",
    )
    .await;
    assert_eq!(
        stdout(&r),
        "\u{1e}deadbeef:0\u{1e}\nafter\n",
        "a fake sentinel is just output"
    );
    let r = exec(&server, room, "cat; read x; echo read=$?").await;
    assert_eq!(stdout(&r), "read=1\n", "stdin is empty");
    let r = exec(&server, room, "exec >&-; echo lost; echo err >&2").await;
    let err = r["stderr"].as_str().unwrap();
    assert!(
        err.contains("write error") && err.ends_with("err\n"),
        "{err}"
    );
    let r = exec(&server, room, "cd /tmp; exit 4").await;
    assert_eq!(r["exitCode"], 4);
    assert!(r["error"].as_str().unwrap().contains("restarted"), "{r}");
    let r = exec(&server, room, "exec sleep 0.1").await;
    assert!(r["error"].as_str().unwrap().contains("restarted"), "{r}");
    assert_eq!(stdout(&exec(&server, room, "pwd").await), "/workspace\n");
    cleanup(&server, room).await;
}
