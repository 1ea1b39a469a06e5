//! Background processes, as docs/protocol.md "Background processes and
//! ports" says, over HTTP and real sockets to a real backend and sandbox:
//! starting (HTTP and rpc), names and ids, listing, logs and their 64 KiB
//! tails, following (no gap, no duplicate, whole characters, frames of at
//! most 64 KiB) and unfollowing, killing (TERM, then KILL) and its group,
//! exiting, the cap, the error shapes, outliving the socket and the shell,
//! cleanup, the room state and its patches, a restart, the idle stop, and
//! where a process runs. Backend-neutral: only the protocol, except what
//! is marked `only_duet_serve` (its flags).

use crate::common;
use crate::common::apps::{
    delete, ended, exec, logs, printed, process, put_file, room_path, start, wait_for,
};
use crate::common::now_ms;
use crate::common::{Server, Ws, answer, http};
use serde_json::{Value, json};
use std::time::Duration;

mod lifecycle;
mod output;
mod room;

/// A `duet_process` frame of `phase` for `id`.
fn process_frame<'a>(phase: &'a str, id: &'a str) -> impl Fn(&Value) -> bool + 'a {
    move |f| {
        f["type"] == "duet_process"
            && f["phase"] == phase
            && (f["processId"] == id || f["process"]["id"] == id)
    }
}

/// Reads frames until the exit frame of `id`; answers it and those before.
async fn until_exit(ws: &mut Ws, id: &str) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        let frame = ws.next().await;
        if process_frame("exit", id)(&frame) {
            return (frame, before);
        }
        before.push(frame);
    }
}

/// The first of `seen` that `ok` accepts, else the next such frame.
async fn seen_or_next(ws: &mut Ws, seen: Vec<Value>, ok: impl Fn(&Value) -> bool) -> Value {
    match seen.into_iter().find(&ok) {
        Some(frame) => frame,
        None => ws.until(ok).await,
    }
}

/// The output frames of `id` among `frames`, as (stream, data).
fn output_of(frames: &[Value], id: &str) -> Vec<(String, String)> {
    frames
        .iter()
        .filter(|f| {
            f["type"] == "duet_process"
                && (f["phase"] == "stdout" || f["phase"] == "stderr")
                && f["processId"] == id
        })
        .map(|f| {
            (
                f["phase"].as_str().unwrap().to_string(),
                f["data"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn id_of(process: &Value) -> String {
    process["id"].as_str().expect("a process id").to_string()
}

/// `0\n1\n…\n{n-1}\n`: what the counter processes print.
fn counted(n: usize) -> String {
    (0..n).map(|i| format!("{i}\n")).collect()
}

/// A shell loop printing 0..n, one a line, `pause` seconds apart.
fn counter(n: usize, pause: &str) -> String {
    format!("i=0; while [ $i -lt {n} ]; do echo $i; i=$((i+1)); sleep {pause}; done")
}

/// How many `sleep`s are alive in the sandbox: a killed one may be a
/// zombie for a moment, until PID 1 reaps it, and that is not alive.
const LIVING_SLEEPS: &str = "ps -e -o stat=,comm= | awk '$1 !~ /^Z/ && $2 == \"sleep\"' | wc -l";
