//! A bounded load test of `duet serve` with its default limits, on loopback
//! only, stopping by itself: ROOMS rooms × SOCKETS sockets with chat and
//! commands for PHASE each, once quiet and once with one socket flooding
//! typing frames. Prints throughput, a message's fan-out to its room (p50,
//! p99), the 429s answered and the server's memory. `cargo bench --bench load`.

mod support;

use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::Ws;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

const ROOMS: usize = 20;
const SOCKETS: usize = 5;
const PHASE: Duration = Duration::from_secs(8);
/// What the flooding socket aims for.
const FLOOD_PER_SEC: u64 = 10_000;
/// `duet serve`'s default limits, given as flags (the bench support turns
/// them off by default).
const DEFAULT_LIMITS: [&str; 16] = [
    "--socket-frames-per-sec",
    "100",
    "--socket-bytes-per-sec",
    "1048576",
    "--socket-messages-per-min",
    "30",
    "--socket-commands-per-min",
    "120",
    "--room-messages-per-min",
    "120",
    "--room-commands-per-min",
    "600",
    "--max-room-sockets",
    "256",
    "--max-sockets",
    "4096",
];

/// What one phase counted.
#[derive(Default)]
struct Counts {
    messages: AtomicU64,
    commands: AtomicU64,
    limited: AtomicU64,
}

/// Reads a socket until it closes, reporting every marker it sees.
fn watch(
    mut ws: futures_util::stream::SplitStream<Ws>,
    seen: mpsc::UnboundedSender<(String, Instant)>,
    counts: Arc<Counts>,
) {
    tokio::spawn(async move {
        while let Some(Ok(Message::Text(text))) = ws.next().await {
            if text.contains("rate limited") {
                counts.limited.fetch_add(1, Ordering::Relaxed);
            }
            // A message reaches a deltas socket as its own `duet_message`
            // (answers and later frames quote it again: not counted).
            if !text.contains(r#""type":"duet_message""#) {
                continue;
            }
            if let Some(at) = text.find("load-") {
                let marker: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                let _ = seen.send((marker, Instant::now()));
            }
        }
    });
}

async fn join(addr: &str, room: &str, user: &str) -> anyhow::Result<Ws> {
    let url = format!("ws://{addr}/api/rooms/{room}/ws?user={user}&deltas=1");
    support::connect(url).await
}

/// One phase: every room chats and runs commands; answers the fan-out samples.
async fn phase(
    addr: &str,
    name: &str,
    flood: bool,
) -> anyhow::Result<(Vec<Duration>, Arc<Counts>)> {
    let counts = Arc::new(Counts::default());
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<(String, Instant)>();
    let mut drivers = Vec::new();
    for r in 0..ROOMS {
        let room = format!("{name}-{r}");
        let mut first = None;
        for s in 0..SOCKETS {
            let (sink, stream) = join(addr, &room, &format!("u{s}")).await?.split();
            watch(stream, seen_tx.clone(), counts.clone());
            if s == 0 {
                first = Some(sink);
            }
        }
        let Some(mut sink) = first else { continue };
        let counts = counts.clone();
        let phase = name.to_string();
        drivers.push(tokio::spawn(async move {
            let start = Instant::now();
            let mut sent = Vec::new();
            let mut n = 0u64;
            while start.elapsed() < PHASE {
                let marker = format!("load-{phase}-{r}-{n}");
                let frame = serde_json::json!({"type":"rpc","id":n,"method":"message","args":[{"text": marker}]});
                if sink.send(Message::text(frame.to_string())).await.is_err() {
                    break;
                }
                counts.messages.fetch_add(1, Ordering::Relaxed);
                sent.push((marker, Instant::now()));
                if n.is_multiple_of(2) {
                    let exec = serde_json::json!({"type":"rpc","id":1_000_000 + n,"method":"exec","args":[{"cmd":"echo ok"}]});
                    if sink.send(Message::text(exec.to_string())).await.is_ok() {
                        counts.commands.fetch_add(1, Ordering::Relaxed);
                    }
                }
                n += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            sent
        }));
    }
    let flooder = if flood {
        let (mut sink, stream) = join(addr, &format!("{name}-0"), "flood").await?.split();
        watch(stream, seen_tx.clone(), counts.clone());
        Some(tokio::spawn(async move {
            let start = Instant::now();
            let mut frames = 0u64;
            while start.elapsed() < PHASE {
                for _ in 0..100 {
                    let _ = sink.send(Message::text(r#"{"type":"duet_typing"}"#)).await;
                }
                frames += 100;
                let due = Duration::from_secs_f64(frames as f64 / FLOOD_PER_SEC as f64);
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    tokio::time::sleep(wait).await;
                }
            }
            frames
        }))
    } else {
        None
    };
    drop(seen_tx);
    let mut sent = std::collections::HashMap::new();
    for d in drivers {
        for (marker, at) in d.await? {
            sent.insert(marker, at);
        }
    }
    let flooded = match flooder {
        Some(f) => f.await?,
        None => 0,
    };
    // Let the last frames arrive, then collect: the last socket of the room
    // to see a marker gives its fan-out.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut last: std::collections::HashMap<String, (usize, Instant)> = Default::default();
    // Each socket sees each message once, as it is stored.
    while let Ok((marker, at)) = seen.try_recv() {
        let e = last.entry(marker).or_insert((0, at));
        e.0 += 1;
        e.1 = e.1.max(at);
    }
    let samples = sent
        .iter()
        .filter_map(|(m, start)| {
            last.get(m)
                .filter(|(n, _)| *n >= SOCKETS)
                .map(|(_, at)| *at - *start)
        })
        .collect();
    if flood {
        println!(
            "flooding socket sent {flooded} frames in {} s",
            PHASE.as_secs()
        );
    }
    Ok((samples, counts))
}

fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut args = vec!["--ai-url", "http://127.0.0.1:9/v1", "--ai-model", "m"];
    args.extend_from_slice(&DEFAULT_LIMITS);
    let (mut server, addr) = support::serve(dir.path(), &args)?;
    let pid = server.id();
    let rt = tokio::runtime::Runtime::new()?;
    let rss_start = support::rss_kib(pid);
    println!(
        "{ROOMS} rooms x {SOCKETS} sockets, chat every 500 ms and a command every second per room, {} s a phase",
        PHASE.as_secs()
    );
    let mut p99s = Vec::new();
    for (name, flood) in [("quiet", false), ("flood", true)] {
        let (samples, counts) = rt.block_on(phase(&addr, name, flood))?;
        let secs = PHASE.as_secs_f64();
        println!(
            "{name}: {:.0} messages/s, {:.0} commands/s sent; {} answered `rate limited`",
            counts.messages.load(Ordering::Relaxed) as f64 / secs,
            counts.commands.load(Ordering::Relaxed) as f64 / secs,
            counts.limited.load(Ordering::Relaxed)
        );
        let (_, p99) = support::report(
            &format!("{name}: fan-out of a message to its room"),
            samples,
        );
        p99s.push(p99);
    }
    println!(
        "fan-out p99 with a flooding socket / quiet: {:.2} (target: under 2)",
        p99s[1].as_secs_f64() / p99s[0].as_secs_f64().max(1e-9)
    );
    println!(
        "server memory: {} KiB at start, {} KiB at the end",
        rss_start,
        support::rss_kib(pid)
    );
    let _ = server.kill();
    let _ = server.wait();
    Ok(())
}
