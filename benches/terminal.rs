//! Figures of the shared terminal, against the real `duet serve` binary and
//! sandbox, each beside a baseline measured in the same run:
//! 1. keystroke-to-echo latency through `duet serve` (a socket sends one
//!    key, its echo comes back as a `duet_term` frame), beside the same
//!    through a local pseudo-terminal with no server;
//! 2. the output of `seq 1 1000000` through the shared terminal to two
//!    attached viewers, beside tmux running it with two attached clients;
//! 3. the memory an idle terminal costs (the server's and its sandboxes'
//!    resident memory, before and after opening terminals in N rooms).
//!
//! `cargo bench --bench terminal` (DUET_BENCH_QUICK=1 for a short run).
//! Needs root for the sandbox, and tmux for the baseline of 2.

#[path = "../tests/it/common/mod.rs"]
mod common;
// Both helper modules include tests/it/common/procs.rs for themselves.
#[allow(clippy::duplicate_mod)]
mod support;

use base64::Engine;
use common::{Server, Ws};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};
use support::{report, tree_rss_kib};

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let quick = std::env::var_os("DUET_BENCH_QUICK").is_some();
    runtime.block_on(async {
        let (server, _dir) = Server::fresh().await;
        keystrokes(&server, if quick { 50 } else { 400 }).await;
        throughput(&server, if quick { 100_000 } else { 1_000_000 }).await;
        memory(&server, if quick { 4 } else { 20 }).await;
        server.stop().await;
    });
}

fn decode(frame: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(frame["data"].as_str().unwrap_or_default())
        .unwrap_or_default()
}

/// A socket attached to `room`'s terminal (its snapshot read).
async fn attach(server: &Server, room: &str, user: &str) -> (Ws, String) {
    let mut ws = server.joined(room, &format!("user={user}")).await;
    let answer = ws
        .rpc(1, "term_open", json!([{"cols": 80, "rows": 24}]))
        .await;
    let term_id = answer["result"]["termId"]
        .as_str()
        .expect("a terminal")
        .to_string();
    let snapshot = ws.until(|f| f["snapshot"] == true).await;
    assert_eq!(snapshot["termId"], term_id.as_str());
    (ws, term_id)
}

async fn type_in(ws: &mut Ws, term_id: &str, bytes: &[u8]) {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    ws.send(json!({"type":"duet_term_input","termId":term_id,"data":data}))
        .await;
}

/// Reads data frames until their bytes end with `marker`.
async fn until_output(ws: &mut Ws, marker: &[u8]) -> usize {
    let mut tail: Vec<u8> = Vec::new();
    let mut total = 0;
    loop {
        let frame = ws.next().await;
        if frame["type"] != "duet_term" || frame["phase"] != "data" {
            continue;
        }
        let bytes = decode(&frame);
        total += bytes.len();
        tail.extend_from_slice(&bytes);
        if tail.windows(marker.len()).any(|w| w == marker) {
            return total;
        }
        let keep = tail.len().saturating_sub(marker.len());
        tail.drain(..keep);
    }
}

/// 1. A key (alternately `x` and Backspace) and the time to its echo.
async fn keystrokes(server: &Server, keys: usize) {
    let (mut ws, term_id) = attach(server, "bench-keys", "ada").await;
    until_output(&mut ws, b"$ ").await;
    let mut times = Vec::with_capacity(keys);
    for i in 0..keys {
        let key: &[u8] = if i % 2 == 0 { b"x" } else { b"\x7f" };
        let started = Instant::now();
        type_in(&mut ws, &term_id, key).await;
        let echo: &[u8] = if i % 2 == 0 { b"x" } else { b"\x08" };
        until_output(&mut ws, echo).await;
        times.push(started.elapsed());
    }
    let served = report("keystroke to echo through duet serve", times);
    let local = tokio::task::spawn_blocking(move || local_pty_keystrokes(keys))
        .await
        .expect("the local run");
    let local = report("keystroke to echo through a local pty (no server)", local);
    println!(
        "  ratio duet serve / local pty: p50 {:.1}x, p99 {:.1}x",
        served.0.as_secs_f64() / local.0.as_secs_f64(),
        served.1.as_secs_f64() / local.1.as_secs_f64()
    );
}

/// A program on a new pseudo-terminal of this host: the master, the child.
fn spawn_on_pty(
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (std::fs::File, std::process::Child) {
    let size = nix::pty::Winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pair = nix::pty::openpty(Some(&size), None).expect("a pty");
    let slave = std::fs::File::from(pair.slave);
    let mut command = std::process::Command::new(program);
    command
        .args(args)
        .envs(env.iter().copied())
        .stdin(slave.try_clone().expect("fd"))
        .stdout(slave.try_clone().expect("fd"))
        .stderr(slave);
    // SAFETY: async-signal-safe calls only: a session on the new terminal.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY as _, 0);
            Ok(())
        });
    }
    let child = command.spawn().expect("the program starts");
    (std::fs::File::from(pair.master), child)
}

/// Reads `master` until its bytes contain `marker`.
fn read_until(master: &mut std::fs::File, marker: &[u8]) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.windows(marker.len()).any(|w| w == marker) {
        let n = master.read(&mut buf).expect("the pty reads");
        seen.extend_from_slice(&buf[..n]);
    }
}

fn local_pty_keystrokes(keys: usize) -> Vec<Duration> {
    let (mut master, mut child) = spawn_on_pty(
        "bash",
        &["--noprofile", "--norc", "-i"],
        &[("PS1", "\\w $ "), ("TERM", "xterm-256color")],
    );
    read_until(&mut master, b"$ ");
    let mut times = Vec::with_capacity(keys);
    for i in 0..keys {
        let (key, echo): (&[u8], &[u8]) = if i % 2 == 0 {
            (b"x", b"x")
        } else {
            (b"\x7f", b"\x08")
        };
        let started = Instant::now();
        master.write_all(key).expect("the pty writes");
        read_until(&mut master, echo);
        times.push(started.elapsed());
    }
    let _ = child.kill();
    let _ = child.wait();
    times
}

/// 2. `seq 1 N` to two viewers, beside tmux with two clients.
async fn throughput(server: &Server, n: u64) {
    let (mut ada, term_id) = attach(server, "bench-seq", "ada").await;
    let (mut bob, _) = attach(server, "bench-seq", "bob").await;
    until_output(&mut ada, b"$ ").await;
    let command = format!("seq 1 {n}; echo EN''D\r");
    let started = Instant::now();
    type_in(&mut ada, &term_id, command.as_bytes()).await;
    let (a, b) = tokio::join!(
        async {
            let bytes = until_output(&mut ada, b"END\r\n").await;
            (bytes, started.elapsed())
        },
        async {
            let bytes = until_output(&mut bob, b"END\r\n").await;
            (bytes, started.elapsed())
        }
    );
    let slowest = a.1.max(b.1);
    println!(
        "seq 1 {n} through the shared terminal to two viewers: {:.0} ms (viewers got {} and {} bytes; {:.1} MB/s each)",
        slowest.as_secs_f64() * 1e3,
        a.0,
        b.0,
        a.0 as f64 / slowest.as_secs_f64() / 1e6
    );
    match tokio::task::spawn_blocking(move || tmux_seq(n)).await {
        Ok(Some(tmux)) => println!(
            "seq 1 {n} in tmux with two attached clients: {:.0} ms; ratio duet / tmux {:.1}x",
            tmux.as_secs_f64() * 1e3,
            slowest.as_secs_f64() / tmux.as_secs_f64()
        ),
        _ => println!("tmux baseline skipped (no tmux)"),
    }
}

/// The same in tmux: a session, two clients attached on ptys of their own
/// (drained as a terminal would), and the time until the shell is done.
fn tmux_seq(n: u64) -> Option<Duration> {
    let socket = format!("duet-bench-{}", std::process::id());
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .arg("-L")
            .arg(&socket)
            .args(args)
            .status()
            .ok()
            .filter(|s| s.success())
    };
    tmux(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "b",
        "-x",
        "80",
        "-y",
        "24",
        "bash --noprofile --norc",
    ])?;
    let mut viewers = Vec::new();
    for _ in 0..2 {
        let (master, child) = spawn_on_pty(
            "tmux",
            &["-L", &socket, "attach", "-t", "b"],
            &[("TERM", "xterm-256color")],
        );
        let mut reader = master.try_clone().ok()?;
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
        });
        viewers.push((master, child));
    }
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    tmux(&[
        "send-keys",
        "-t",
        "b",
        &format!("seq 1 {n}; tmux -L {socket} wait-for -S done"),
        "Enter",
    ])?;
    tmux(&["wait-for", "done"])?;
    let elapsed = started.elapsed();
    tmux(&["kill-server"]);
    for (master, mut child) in viewers {
        let _ = child.kill();
        let _ = child.wait();
        drop(master);
    }
    Some(elapsed)
}

/// 3. N rooms with a started sandbox, then each with an idle terminal.
async fn memory(server: &Server, rooms: usize) {
    for i in 0..rooms {
        let (status, body) = server
            .post(
                &format!("/api/rooms/bench-mem-{i}/sandbox/exec"),
                json!({"cmd": "true"}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = tree_rss_kib(server.pid());
    let mut sockets = Vec::new();
    for i in 0..rooms {
        let (mut ws, term_id) = attach(server, &format!("bench-mem-{i}"), "ada").await;
        until_output(&mut ws, b"$ ").await;
        let _ = ws.rpc(2, "term_detach", json!([{"termId": term_id}])).await;
        sockets.push(ws);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = tree_rss_kib(server.pid());
    println!(
        "memory per idle terminal: {:.2} MiB ({} terminals; the server and its sandboxes: {:.1} MiB before, {:.1} MiB after)",
        after.saturating_sub(before) as f64 / rooms as f64 / 1024.0,
        rooms,
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
}
