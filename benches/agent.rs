//! Figures of the agent's turn, against the real `duet serve` binary with
//! a fake OpenAI-compatible model on loopback:
//! 1. the time from the model's last token to the stored reply (the room's
//!    `cf_agent_state` holding it) for a reply with three `<run>` commands;
//! 2. the `duet_ai` delta frames per second a room absorbs from a model
//!    that streams as fast as it can, as seen by a client of the room.
//!
//! `cargo bench --bench agent` (set DUET_BENCH_QUICK=1 for a short run).

#[path = "../tests/it/common/mod.rs"]
mod common;

use common::Server;
use common::agent_support::{FakeModel, Script};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let quick = std::env::var_os("DUET_BENCH_QUICK").is_some();
        last_token_to_stored_reply(if quick { 5 } else { 30 }).await;
        frames_per_second(if quick { 2_000 } else { 20_000 }).await;
    });
}

/// Whether a frame is the state holding a new agent message.
fn agent_stored(frame: &Value) -> bool {
    frame["type"] == "cf_agent_state"
        && frame["state"]["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["role"] == "agent")
}

async fn last_token_to_stored_reply(turns: usize) {
    let reply = "Three commands.\n<run>true</run>\n<run>echo a</run>\n<run>echo b >&2</run>";
    let model = FakeModel::start(vec![]).await;
    model.always(Script::chunked(reply, 8));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = Server::start(dir.path(), &["--ai-url", &model.url, "--ai-model", "m"]).await;
    // Warm up: the room's sandbox starts on first use.
    let (_, warm) = server
        .post("/api/rooms/bench/sandbox/exec", json!({"cmd": "true"}))
        .await;
    assert_eq!(warm["result"]["exitCode"], 0, "{warm}");
    let mut ws = server.joined("bench", "user=watcher").await;
    let mut samples = Vec::with_capacity(turns);
    for i in 0..turns {
        let url = server.url("/api/rooms/bench/message");
        let answer = tokio::spawn(async move {
            common::answer(
                common::http()
                    .post(url)
                    .json(&json!({"text": format!("q{i}")})),
            )
            .await
        });
        ws.until(agent_stored).await;
        let stored = Instant::now();
        let (status, body) = answer.await.expect("the request task");
        assert_eq!(status, 200, "{body}");
        assert!(body["reply"].is_string(), "{body}");
        let last = model.last_token().expect("the model streamed");
        samples.push(stored.duration_since(last));
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "last token → stored reply (3 commands), {turns} turns: median {:.2} ms, p90 {:.2} ms, min {:.2} ms, max {:.2} ms",
        ms(samples[turns / 2]),
        ms(samples[turns * 9 / 10]),
        ms(samples[0]),
        ms(samples[turns - 1]),
    );
    server.stop().await;
}

async fn frames_per_second(deltas: usize) {
    let pieces: Vec<String> = (0..deltas).map(|i| format!("w{} ", i % 10)).collect();
    let expected = pieces.concat();
    let model = FakeModel::start(vec![Script::Stream(pieces)]).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = Server::start(dir.path(), &["--ai-url", &model.url, "--ai-model", "m"]).await;
    let mut ws = server.joined("fps", "user=watcher").await;
    let url = server.url("/api/rooms/fps/message");
    let answer = tokio::spawn(async move {
        common::answer(common::http().post(url).json(&json!({"text": "stream"}))).await
    });
    ws.until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    let started = Instant::now();
    let (mut frames, mut text) = (0usize, String::new());
    loop {
        let frame = ws.next().await;
        if frame["type"] != "duet_ai" {
            continue;
        }
        match frame["phase"].as_str() {
            Some("delta") => {
                frames += 1;
                text.push_str(frame["text"].as_str().unwrap_or_default());
            }
            Some("end") | Some("error") => break,
            _ => {}
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let (status, body) = answer.await.expect("the request task");
    assert_eq!(status, 200, "{body}");
    assert_eq!(text, expected, "the client saw the whole reply");
    println!(
        "a fast model through the room: {deltas} model pieces in {:.1} ms = {:.0} pieces/s, \
         reaching a client as {frames} delta frames ({:.0} frames/s), text complete",
        elapsed * 1000.0,
        deltas as f64 / elapsed,
        frames as f64 / elapsed,
    );
    server.stop().await;
}
