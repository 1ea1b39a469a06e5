//! Figures of checkpoints (docs/protocol.md "Checkpoints, restore and
//! fork"), against the real `duet serve` binary and sandbox: a workspace
//! of 10,000 files, 100 MiB in all (100 folders of 100 files), in a room;
//! the time to take a checkpoint of it and to restore it over HTTP, each
//! beside `cp -a` of the same folder measured in the same run:
//! - in the sandbox, by a command, onto the same disk as the workspace
//!   (the time the sandbox took, as its `ExecResult.duration` says, and
//!   the request's round trip);
//! - on the host, of a copy of the same tree in a temporary folder.
//!
//! The target is under a second each. Prints figures, asserts
//! nothing. `cargo bench --bench checkpoints` (DUET_BENCH_QUICK=1 for one
//! run instead of five). Needs root for the sandbox, and python3 in it.

#[path = "../tests/it/common/mod.rs"]
mod common;

use common::Server;
use common::apps::{delete, room_path};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const ROOM: &str = "bench-checkpoints";
const FILES: usize = 10_000;
const FOLDERS: usize = 100;
const TOTAL: usize = 100 * 1024 * 1024;
/// Long enough for any of these commands on a busy machine.
const TIMEOUT_MS: u64 = 600_000;

/// Writes the tree into `tree/` of the current folder (the sandbox's
/// /workspace): the same names and sizes as `host_tree`.
const TREE: &str = "python3 -c '
import os
base, extra = divmod(TOTAL, FILES)
for i in range(FILES):
    d = \"tree/d%03d\" % (i % FOLDERS)
    os.makedirs(d, exist_ok=True)
    with open(\"%s/f%05d\" % (d, i), \"wb\") as f:
        f.write(os.urandom(base + (1 if i < extra else 0)))
'";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let runs = if std::env::var_os("DUET_BENCH_QUICK").is_some() {
        1
    } else {
        5
    };
    runtime.block_on(async {
        let (server, _dir) = Server::fresh().await;
        let script = TREE
            .replace("TOTAL", &TOTAL.to_string())
            .replace("FILES", &FILES.to_string())
            .replace("FOLDERS", &FOLDERS.to_string());
        let made = exec(&server, &script).await;
        assert_eq!(made["exitCode"], 0, "writing the tree: {made}");
        let counted = exec(&server, "find tree -type f -printf '%s\\n' | awk '{n++; s+=$1} END {print n, s}'").await;
        println!(
            "A workspace of {FILES} files in {FOLDERS} folders, {} MiB in all (files, bytes: {}):",
            TOTAL >> 20,
            counted["stdout"].as_str().unwrap_or("?").replace('\n', " ").trim()
        );

        let (mut checkpoint, mut restore) = (Vec::new(), Vec::new());
        let (mut cp_sandbox, mut cp_wall) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let begun = Instant::now();
            let (status, body) = post(&server, "/checkpoints", json!({})).await;
            checkpoint.push(begun.elapsed());
            assert_eq!(status, 200, "checkpoint: {body}");
            let id = body["checkpoint"]["id"].as_str().unwrap().to_string();
            let size = body["checkpoint"]["size"].as_u64().unwrap_or(0);
            assert_eq!(size, TOTAL as u64, "{body}");

            let begun = Instant::now();
            let (status, body) =
                post(&server, &format!("/checkpoints/{id}/restore"), json!({})).await;
            restore.push(begun.elapsed());
            assert_eq!(status, 200, "restore: {body}");
            // Its room on the disk is free for the next run.
            let (status, body) =
                delete(&server, &room_path(ROOM, &format!("/checkpoints/{id}"))).await;
            assert_eq!(status, 200, "delete: {body}");

            let begun = Instant::now();
            let copied = exec(&server, "cp -a tree tree-copy").await;
            cp_wall.push(begun.elapsed());
            assert_eq!(copied["exitCode"], 0, "cp -a: {copied}");
            cp_sandbox.push(Duration::from_millis(
                copied["duration"].as_u64().unwrap_or(0),
            ));
            exec(&server, "rm -rf tree-copy").await;
        }

        let host = tempfile::tempdir().expect("a temporary folder");
        host_tree(&host.path().join("tree"));
        let mut cp_host = Vec::new();
        for _ in 0..runs {
            let copy = host.path().join("tree-copy");
            let begun = Instant::now();
            let ok = std::process::Command::new("cp")
                .arg("-a")
                .arg(host.path().join("tree"))
                .arg(&copy)
                .status()
                .is_ok_and(|s| s.success());
            cp_host.push(begun.elapsed());
            assert!(ok, "cp -a on the host");
            std::fs::remove_dir_all(&copy).expect("removing the host copy");
        }

        println!("{runs} run(s) each, median (min–max):");
        let checkpoint = line("  checkpoint (POST /checkpoints)", checkpoint);
        let restore = line("  restore (POST /checkpoints/{id}/restore)", restore);
        let sandbox = line("  cp -a in the sandbox (its duration)", cp_sandbox);
        line("  cp -a in the sandbox (the exec's round trip)", cp_wall);
        let host = line("  cp -a on the host (a copy of the tree)", cp_host);
        println!("Ratios (median over median):");
        for (name, d) in [("checkpoint", checkpoint), ("restore", restore)] {
            println!(
                "  {name:<10} {:>6.2}x cp -a in the sandbox   {:>6.2}x cp -a on the host   target < 1 s: {}",
                d.as_secs_f64() / sandbox.as_secs_f64().max(1e-9),
                d.as_secs_f64() / host.as_secs_f64().max(1e-9),
                if d < Duration::from_secs(1) { "met" } else { "missed" }
            );
        }
        server.stop().await;
    });
}

/// Runs `cmd` in the room's shell; answers the `ExecResult`.
async fn exec(server: &Server, cmd: &str) -> Value {
    let body = json!({"cmd": cmd, "timeoutMs": TIMEOUT_MS});
    let (status, body) = post(server, "/sandbox/exec", body).await;
    assert_eq!(status, 200, "{cmd}: {body}");
    body["result"].clone()
}

/// `POST` to the room's `rest` with a client that waits as long as a
/// command may run (the tests' client gives up after 20 s).
async fn post(server: &Server, rest: &str, body: Value) -> (u16, Value) {
    let _ = common::http(); // installs the TLS provider
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(TIMEOUT_MS + 60_000))
        .build()
        .expect("an HTTP client");
    let req = client.post(server.url(&room_path(ROOM, rest))).json(&body);
    common::answer(req).await
}

/// The same tree as TREE, on the host.
fn host_tree(root: &Path) {
    let (base, extra) = (TOTAL / FILES, TOTAL % FILES);
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for i in 0..FILES {
        let dir = root.join(format!("d{:03}", i % FOLDERS));
        std::fs::create_dir_all(&dir).expect("a host folder");
        let len = base + usize::from(i < extra);
        // Incompressible enough: a xorshift stream, like the sandbox's urandom.
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        std::fs::write(dir.join(format!("f{i:05}")), bytes).expect("a host file");
    }
}

/// Prints the median, min and max of `samples`; answers the median.
fn line(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = samples[samples.len() / 2];
    println!(
        "{name:<48} {:>9.1} ms   ({:.1}–{:.1} ms)",
        ms(median),
        ms(samples[0]),
        ms(samples[samples.len() - 1])
    );
    median
}
