//! Figures of the backend, each beside its baseline in the same run of a
//! real `duet serve` (release build): `cargo bench --bench server`. With
//! `DUET_BENCH_BACKEND=worker` the same figures of the local worker
//! (worker/dev.sh: workerd through Miniflare, the stand-in Sandbox in front of
//! a `duet serve`); its memory is the whole stack's. `DUET_BENCH_ROOMS=N`
//! opens N rooms of 10 idle sockets instead of 1,000 (worker/bench.sh
//! runs both backends with 100: 1,000 sockets). `DUET_BENCH_BIN=PATH` runs
//! another `duet` build (a baseline's) under the same harness.
//! - `POST /sandbox/exec {"cmd":"true"}` on a warm room, beside a bare
//!   fork+exec of `true`;
//! - a message's fan-out to 100 WebSocket clients of one room, from the
//!   POST to the last client's frame, with full states and with deltas;
//! - bytes one socket receives for 100 messages, full states and deltas;
//! - bytes sent to all sockets while 200 deltas sockets join one room;
//! - resident memory of the server with 1,000 rooms of 10 idle deltas
//!   connections, and once they closed and the rooms unloaded;
//! - resident memory after 10,000 chat-only rooms (one socket, one message
//!   each) and after 100 rooms that ran a command came and went.
//!
//! Sections can be picked by name: `cargo bench --bench server -- fanout bytes`
//! (`exec`, `fanout`, `bytes`, `presence`, `memory`, `rooms`; all by default).
//! `engines` (only when named) runs `duet serve`, the local worker and the
//! original engine's room side by side (benches/engines/mod.rs).

mod engines;
mod support;

use futures_util::{StreamExt, stream};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{ms, report};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

const EXECS: usize = 1000;
const FANOUT_CLIENTS: usize = 100;
const FANOUT_MESSAGES: usize = 300;
/// Messages sent before those timed (see `fanout_samples`).
const FANOUT_WARMUP: usize = 20;
const BYTES_MESSAGES: usize = 100;
const ROOMS: usize = 1000;
const PER_ROOM: usize = 10;

/// Rooms of idle sockets: `DUET_BENCH_ROOMS`, else ROOMS.
fn rooms() -> usize {
    std::env::var("DUET_BENCH_ROOMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(ROOMS)
}

/// A model that accepts and never answers, as a model still thinking: the
/// agent's turn then does not compete with a message's fan-out.
fn thinking_model() -> anyhow::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    Ok(format!("http://{addr}/v1"))
}

/// `duet serve` on a free port, with the thinking model or with none (then
/// each message's turn ends at once with a system message: a second
/// broadcast right behind the first).
fn start_server(dir: &std::path::Path, thinking: bool) -> anyhow::Result<(Child, String)> {
    if thinking {
        let model = thinking_model()?;
        support::serve(dir, &["--ai-url", model.as_str(), "--ai-model", "thinking"])
    } else {
        // Nothing listens here: the turn fails at once.
        support::serve(
            dir,
            &["--ai-url", "http://127.0.0.1:9/v1", "--ai-model", "none"],
        )
    }
}

async fn exec_figures(http: &reqwest::Client, addr: &str) -> anyhow::Result<()> {
    let url = format!("http://{addr}/api/rooms/bench-exec/sandbox/exec");
    let body = serde_json::json!({"cmd": "true"});
    // Warm: the sandbox starts on the first command.
    for _ in 0..20 {
        http.post(&url).json(&body).send().await?.bytes().await?;
    }
    // One of each in turn, so that both meet the same load on a shared
    // machine and the difference is the server's own.
    let (mut samples, mut bare) = (Vec::with_capacity(EXECS), Vec::with_capacity(EXECS));
    for _ in 0..EXECS {
        let start = Instant::now();
        let res = http.post(&url).json(&body).send().await?;
        anyhow::ensure!(res.status() == 200, "exec answered {}", res.status());
        res.bytes().await?;
        samples.push(start.elapsed());
        let start = Instant::now();
        Command::new("true").status()?;
        bare.push(start.elapsed());
    }
    println!("{EXECS} calls each, one of each in turn");
    let mut paired: Vec<f64> = samples
        .iter()
        .zip(&bare)
        .map(|(s, b)| ms(*s) - ms(*b))
        .collect();
    paired.sort_by(f64::total_cmp);
    let (m1, p1) = report("POST /sandbox/exec {\"cmd\":\"true\"}, warm room", samples);
    let (m2, p2) = report("bare fork+exec of true", bare);
    println!(
        "{:<48} median {:>+8.3} ms",
        "difference of each pair",
        paired[paired.len() / 2]
    );
    println!(
        "{:<48} median {:>+8.3} ms   p99 {:>+8.3} ms   (target: within 0.3 ms)",
        "difference",
        ms(m1) - ms(m2),
        ms(p1) - ms(p2)
    );
    Ok(())
}

/// The socket query of a client that asks for deltas, or not.
fn deltas_query(deltas: bool) -> &'static str {
    if deltas { "&deltas=1" } else { "" }
}

async fn fanout_figures(
    http: &reqwest::Client,
    addr: &str,
    condition: &str,
    deltas: bool,
) -> anyhow::Result<()> {
    let room = format!("bench-fan{}", u8::from(deltas));
    let fanout = fanout_samples(
        http,
        addr,
        &room,
        deltas,
        FANOUT_CLIENTS,
        FANOUT_MESSAGES,
        "agent",
    )
    .await?;
    let kind = if deltas { "deltas" } else { "full states" };
    println!(
        "{FANOUT_MESSAGES} messages to {FANOUT_CLIENTS} clients of one room ({condition}; {kind})"
    );
    report("fan-out: POST to the last client's frame", fanout.samples);
    println!("{:<48} (target: p99 under 10 ms)", "");
    Ok(())
}

/// What `fanout_samples` measured.
pub(crate) struct Fanout {
    /// Per message: from its POST to the last client's frame that shows it.
    pub samples: Vec<Duration>,
    /// Bytes of the frame that showed the last message, per client.
    pub last_frame: usize,
}

/// Posts `messages` messages one after another to `room`, which
/// `clients` clients joined (with deltas or full states), each `to` the
/// agent or the room; each is timed from its POST until the last client
/// has a frame showing it (its text near the frame's end: a full state
/// ends with its newest message). The first `FANOUT_WARMUP` are sent the
/// same way but not timed: they open the POST's connection and warm what
/// the first messages of any engine pay for once, which would otherwise
/// be its p99.
pub(crate) async fn fanout_samples(
    http: &reqwest::Client,
    addr: &str,
    room: &str,
    deltas: bool,
    clients: usize,
    messages: usize,
    to: &str,
) -> anyhow::Result<Fanout> {
    // Texts no earlier call left in the room: a full state's end shows only this call's.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let seen = Arc::new(Seen::new(clients));
    let mut tasks = Vec::new();
    for c in 0..clients {
        let url = format!(
            "ws://{addr}/api/rooms/{room}/ws?user=c{c}{}",
            deltas_query(deltas)
        );
        let mut ws = support::connect(url).await?;
        let seen = seen.clone();
        tasks.push(tokio::spawn(async move {
            let mut next = 0usize;
            let mut marker = format!("\"fanout{call}-{next:05}\"");
            while let Some(Ok(msg)) = ws.next().await {
                let Message::Text(text) = msg else { continue };
                // The newest message closes the frame's messages: look near the end.
                let bytes = text.as_bytes();
                let tail = &bytes[bytes.len().saturating_sub(512)..];
                if tail.windows(marker.len()).any(|w| w == marker.as_bytes()) {
                    seen.add(Instant::now(), bytes.len());
                    next += 1;
                    marker = format!("\"fanout{call}-{next:05}\"");
                }
            }
            seen.left.notify_one();
        }));
    }
    // Let every client finish its connect sequence.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let url = format!("http://{addr}/api/rooms/{room}/message");
    let mut samples = Vec::with_capacity(messages);
    let mut posts = Vec::with_capacity(messages);
    for i in 0..FANOUT_WARMUP + messages {
        let body = serde_json::json!({"text": format!("fanout{call}-{i:05}"), "userId": "bench", "to": to});
        let start = Instant::now();
        // To the agent: answered when its turn ends (never, with this
        // model). Not awaited either way.
        posts.push(tokio::spawn(http.post(&url).json(&body).send()));
        let all = seen.all.notified();
        tokio::pin!(all);
        all.as_mut().enable();
        if seen.count() < (i + 1) * clients {
            tokio::select! {
                () = all => {}
                () = seen.left.notified() => anyhow::bail!("a client left"),
            }
        }
        anyhow::ensure!(
            seen.count() == (i + 1) * clients,
            "clients saw {} frames by message {i}",
            seen.count()
        );
        if i >= FANOUT_WARMUP {
            samples.push(seen.last() - start);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for post in posts {
        post.abort();
    }
    for task in tasks {
        task.abort();
    }
    Ok(Fanout {
        samples,
        last_frame: seen.last_frame.load(Ordering::Relaxed),
    })
}

/// What the clients of `fanout_samples` saw: kept where they read it, so
/// counting a frame costs a client no wake of another task (the measure
/// is the server's, not the bench's).
struct Seen {
    clients: usize,
    /// Frames that showed their client's next message, all clients.
    frames: AtomicUsize,
    /// When the latest of them came.
    latest: std::sync::Mutex<Option<Instant>>,
    last_frame: AtomicUsize,
    /// Woken when every client has the message.
    all: tokio::sync::Notify,
    /// Woken when a client's socket ends.
    left: tokio::sync::Notify,
}

impl Seen {
    fn new(clients: usize) -> Self {
        Seen {
            clients,
            frames: AtomicUsize::new(0),
            latest: std::sync::Mutex::new(None),
            last_frame: AtomicUsize::new(0),
            all: tokio::sync::Notify::new(),
            left: tokio::sync::Notify::new(),
        }
    }

    fn add(&self, at: Instant, size: usize) {
        {
            let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
            *latest = Some(latest.map_or(at, |l| l.max(at)));
        }
        self.last_frame.store(size, Ordering::Relaxed);
        if (self.frames.fetch_add(1, Ordering::AcqRel) + 1).is_multiple_of(self.clients) {
            self.all.notify_waiters();
        }
    }

    fn count(&self) -> usize {
        self.frames.load(Ordering::Acquire)
    }

    fn last(&self) -> Instant {
        let latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        latest.unwrap_or_else(Instant::now)
    }
}

/// Bytes of text frames one socket receives while 100 messages are
/// posted to its room, after its connect sequence.
async fn bytes_figures(http: &reqwest::Client, addr: &str, deltas: bool) -> anyhow::Result<()> {
    let room = format!("bench-bytes{}", u8::from(deltas));
    let url = format!(
        "ws://{addr}/api/rooms/{room}/ws?user=b{}",
        deltas_query(deltas)
    );
    let mut ws = support::connect(url).await?;
    for _ in 0..3 {
        ws.next().await;
    }
    let post = format!("http://{addr}/api/rooms/{room}/message");
    let mut posts = Vec::with_capacity(BYTES_MESSAGES);
    let mut bytes = 0usize;
    for i in 0..BYTES_MESSAGES {
        let body = serde_json::json!({"text": format!("bytes-{i:05}"), "userId": "bench"});
        posts.push(tokio::spawn(http.post(&post).json(&body).send()));
        let marker = format!("\"bytes-{i:05}\"");
        loop {
            let Some(msg) = ws.next().await else {
                anyhow::bail!("the socket closed");
            };
            if let Message::Text(text) = msg? {
                bytes += text.len();
                if text.as_str().contains(&marker) {
                    break;
                }
            }
        }
    }
    for post in posts {
        post.abort();
    }
    let kind = if deltas { "deltas" } else { "full states" };
    println!(
        "{:<48} {:>8.3} MB   ({BYTES_MESSAGES} messages, {kind})",
        "bytes to one socket",
        bytes as f64 / 1e6
    );
    Ok(())
}

/// Resident memory of a server whose rooms unload after a second: empty,
/// with ROOMS rooms of 10 idle deltas sockets, and once they closed and
/// their rooms unloaded.
async fn memory_figures() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (mut server, addr) = support::serve(
        dir.path(),
        &[
            "--room-idle-secs",
            "1",
            "--ai-url",
            "http://127.0.0.1:9/v1",
            "--ai-model",
            "none",
        ],
    )?;
    let pid = server.id();
    let result = idle_sockets(&addr, pid).await;
    support::stop(&mut server);
    result
}

async fn idle_sockets(addr: &str, pid: u32) -> anyhow::Result<()> {
    let before = settled_rss(pid).await;
    let rooms = rooms();
    let urls: Vec<String> = (0..rooms * PER_ROOM)
        .map(|n| {
            format!(
                "ws://{addr}/api/rooms/idle-{}/ws?user=u{}&deltas=1",
                n / PER_ROOM,
                n % PER_ROOM
            )
        })
        .collect();
    let started = Instant::now();
    let sockets: Vec<_> = stream::iter(urls)
        .map(|url| async move {
            let mut ws = support::connect(url).await?;
            // The connect sequence: identity, state, presence, you.
            for _ in 0..4 {
                ws.next().await;
            }
            anyhow::Ok(ws)
        })
        .buffer_unordered(64)
        .collect()
        .await;
    let mut held = Vec::with_capacity(sockets.len());
    for s in sockets {
        held.push(s?);
    }
    let connect_time = started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = support::backend_rss_kib(pid);
    let count = held.len();
    for mut ws in held {
        let _ = ws.close(None).await;
    }
    let closed = settled_rss(pid).await;
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "{rooms} rooms x {PER_ROOM} idle deltas connections ({count} sockets, connected in {:.1} s)",
        connect_time.as_secs_f64()
    );
    println!(
        "{:<48} {:>8.1} MiB   (target: under 100 MiB)",
        "server resident memory (VmRSS)",
        mib(after)
    );
    println!(
        "{:<48} {:>8.1} MiB   (empty before: {:.1} MiB; per socket {:.1} KiB)",
        "after they closed and the rooms unloaded",
        mib(closed),
        mib(before),
        after.saturating_sub(before) as f64 / count.max(1) as f64
    );
    Ok(())
}

const PRESENCE_JOINS: usize = 200;

/// Bytes every socket of one room receives while PRESENCE_JOINS deltas
/// sockets join it one after another (until a message posted after the
/// last join reaches them all).
async fn presence_figures(http: &reqwest::Client, addr: &str) -> anyhow::Result<()> {
    let room = "bench-presence";
    let (done_tx, mut done) = mpsc::unbounded_channel::<usize>();
    let mut clients = Vec::new();
    for c in 0..PRESENCE_JOINS {
        let url = format!("ws://{addr}/api/rooms/{room}/ws?user=p{c}&deltas=1");
        let mut ws = support::connect(url).await?;
        // Joined once its own presence arrived (the third frame).
        let mut bytes = 0usize;
        for _ in 0..3 {
            if let Some(Ok(Message::Text(text))) = ws.next().await {
                bytes += text.len();
            }
        }
        let done_tx = done_tx.clone();
        clients.push(tokio::spawn(async move {
            while let Some(Ok(msg)) = ws.next().await {
                let Message::Text(text) = msg else { continue };
                if text.contains("presence-done") {
                    let _ = done_tx.send(bytes);
                    break;
                }
                bytes += text.len();
            }
        }));
    }
    drop(done_tx);
    let url = format!("http://{addr}/api/rooms/{room}/message");
    let body = serde_json::json!({"text": "presence-done", "userId": "bench"});
    let post = tokio::spawn(http.post(&url).json(&body).send());
    let mut total = 0usize;
    for _ in 0..PRESENCE_JOINS {
        total += done
            .recv()
            .await
            .ok_or_else(|| anyhow::anyhow!("a client left"))?;
    }
    post.abort();
    for c in clients {
        c.abort();
    }
    println!(
        "{:<48} {:>8.3} MB   ({PRESENCE_JOINS} deltas sockets join one room; target: under 10 MB)",
        "bytes sent to all sockets",
        total as f64 / 1e6
    );
    Ok(())
}

const CHAT_ROOMS: usize = 10_000;
const COMMAND_ROOMS: usize = 100;

/// Waits until the server's resident memory stops falling (rooms unload
/// one idle period after their last use).
async fn settled_rss(pid: u32) -> u64 {
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut last = support::backend_rss_kib(pid);
    let mut steady = 0;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = support::backend_rss_kib(pid);
        steady = if now >= last { steady + 1 } else { 0 };
        // Three seconds without a fall: settled.
        if steady == 3 {
            return now;
        }
        last = now;
    }
    last
}

/// Resident memory of a server whose rooms unload after `idle_secs`:
/// empty, after 10,000 chat-only rooms came and went, after 100 rooms ran
/// a command.
async fn rooms_figures(http: &reqwest::Client, idle_secs: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (mut server, addr) = support::serve(
        dir.path(),
        &[
            "--room-idle-secs",
            idle_secs,
            "--ai-url",
            "http://127.0.0.1:9/v1",
            "--ai-model",
            "none",
        ],
    )?;
    let pid = server.id();
    let result = async {
        let empty = settled_rss(pid).await;
        let started = Instant::now();
        let chats: Vec<anyhow::Result<()>> = stream::iter(0..CHAT_ROOMS)
            .map(|n| {
                let addr = addr.clone();
                async move {
                    let url = format!("ws://{addr}/api/rooms/chat-{n}/ws?user=u{n}");
                    let mut ws = support::connect(url).await?;
                    for _ in 0..3 {
                        ws.next().await;
                    }
                    let post = format!("http://{addr}/api/rooms/chat-{n}/message");
                    let body = serde_json::json!({"text": "hello", "userId": "bench"});
                    http.post(&post).json(&body).send().await?.bytes().await?;
                    ws.close(None).await?;
                    Ok(())
                }
            })
            .buffer_unordered(32)
            .collect()
            .await;
        chats.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
        let chat_time = started.elapsed();
        let after_chats = settled_rss(pid).await;
        let execs: Vec<anyhow::Result<()>> = stream::iter(0..COMMAND_ROOMS)
            .map(|n| {
                let addr = addr.clone();
                async move {
                    let url = format!("http://{addr}/api/rooms/cmd-{n}/sandbox/exec");
                    let body = serde_json::json!({"cmd": "true"});
                    let res = http.post(&url).json(&body).send().await?;
                    anyhow::ensure!(res.status() == 200, "exec answered {}", res.status());
                    res.bytes().await?;
                    Ok(())
                }
            })
            .buffer_unordered(4)
            .collect()
            .await;
        execs.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
        let after_execs = settled_rss(pid).await;
        let mib = |k: u64| k as f64 / 1024.0;
        println!("rooms unloading after {idle_secs} s idle (--room-idle-secs {idle_secs})");
        println!(
            "{:<48} {:>8.1} MiB",
            "server resident memory, empty",
            mib(empty)
        );
        println!(
            "{:<48} {:>8.1} MiB   ({CHAT_ROOMS} rooms in {:.1} s)",
            "after chat-only rooms came and went",
            mib(after_chats),
            chat_time.as_secs_f64()
        );
        println!(
            "{:<48} {:>8.1} MiB   ({COMMAND_ROOMS} rooms)",
            "after rooms that ran a command went",
            mib(after_execs)
        );
        anyhow::Ok(())
    }
    .await;
    support::stop(&mut server);
    result
}

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    support::raise_open_files();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let backend = if support::worker_backend() {
        "the local worker (worker/dev.sh)"
    } else {
        "duet serve"
    };
    println!("backend: {backend}");
    println!(
        "load average at start: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let dir = tempfile::tempdir()?;
    let other_dir = tempfile::tempdir()?;
    let (mut server, addr) = start_server(dir.path(), true)?;
    let (mut failing, failing_addr) = start_server(other_dir.path(), false)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let picked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wants = |name: &str| picked.is_empty() || picked.iter().any(|p| p == name);
    let result = runtime.block_on(async {
        let http = reqwest::Client::builder().tcp_nodelay(true).build()?;
        if wants("exec") {
            exec_figures(&http, &addr).await?;
            println!();
        }
        if wants("fanout") {
            for deltas in [false, true] {
                fanout_figures(&http, &addr, "the model still thinks", deltas).await?;
                println!();
                fanout_figures(
                    &http,
                    &failing_addr,
                    "no model: a system message follows each",
                    deltas,
                )
                .await?;
                println!();
            }
        }
        if wants("bytes") {
            for deltas in [false, true] {
                bytes_figures(&http, &addr, deltas).await?;
            }
            println!();
        }
        if wants("presence") {
            presence_figures(&http, &addr).await?;
            println!();
        }
        if wants("memory") {
            memory_figures().await?;
            println!();
        }
        if picked.iter().any(|p| p == "engines") {
            engines::engines_figures(&http).await?;
            println!();
        }
        if wants("rooms") {
            // Rooms that stay loaded (as before they could unload), then
            // rooms that unload after a second.
            rooms_figures(&http, "86400").await?;
            println!();
            rooms_figures(&http, "1").await?;
        }
        Ok::<_, anyhow::Error>(())
    });
    for child in [&mut server, &mut failing] {
        support::stop(child);
    }
    result
}
