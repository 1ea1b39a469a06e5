//! Section `engines`: `duet serve`, the local worker (worker/dev.sh) and
//! the original engine's room (worker/bench/original.sh: a bare Agents SDK
//! `Agent` whose `setState` carries the message list, in local workerd),
//! all running at once in one run, measured by the same clients (memory
//! first, each engine still empty; then the fan-out in 3 rounds of 100
//! messages that take turns among the engines, so that load on the machine
//! that comes and goes falls on all alike; then exec, in 3 rounds of 100
//! calls the engines take turns in likewise):
//! - a message's fan-out to 100 WebSocket clients of one room (p50, p99,
//!   and each as a ratio of the original's), with its floor in local
//!   workerd: a bare Durable Object that only loops `ws.send` of one string
//!   over its sockets (worker/bench/floor.ts); then the same to one client,
//!   which is the cost of a message's way in without the fan-out. Each
//!   round sends 20 messages first, untimed (`fanout_samples`);
//! - `POST /sandbox/exec {"cmd":"true"}` on a warm room, `duet serve` and
//!   the worker, with the worker's own breakdown (its `Server-Timing`);
//! - idle memory per room and per socket: the engine's own process
//!   (`duet serve`; workerd for the other two) empty, with N rooms of one
//!   socket, then of M sockets (`DUET_BENCH_ROOMS`, default 100; M = 10).

use super::{FANOUT_CLIENTS, FANOUT_MESSAGES, PER_ROOM, fanout_samples, thinking_model};
use crate::support::{self, ms, percentile};
use futures_util::{StreamExt, stream};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Rounds the fan-out's messages are sent in, the engines taking turns.
const FANOUT_ROUNDS: usize = 3;
/// Exec calls measured per engine.
const EXECS: usize = 300;
/// Rounds the execs are sent in, the engines taking turns.
const EXEC_ROUNDS: usize = 3;
/// Rooms of idle sockets, unless DUET_BENCH_ROOMS says.
const IDLE_ROOMS: usize = 100;

#[derive(Clone, Copy, PartialEq)]
enum Engine {
    Original,
    Floor,
    Serve,
    Worker,
}

impl Engine {
    /// The name `DUET_BENCH_ENGINES` picks it by.
    fn key(self) -> &'static str {
        match self {
            Engine::Original => "original",
            Engine::Floor => "floor",
            Engine::Serve => "serve",
            Engine::Worker => "worker",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Engine::Original => "original (Agents SDK room, setState)",
            Engine::Floor => "floor (bare DO, ws.send loop)",
            Engine::Serve => "duet serve",
            Engine::Worker => "worker (worker/dev.sh)",
        }
    }

    /// Starts the engine on a free loopback port with storage in `dir`
    /// (`model`: a chat API that never answers); answers it and its address.
    fn start(self, dir: &Path, model: &str) -> anyhow::Result<(Child, String)> {
        let repo = env!("CARGO_MANIFEST_DIR");
        let flags = |c: &mut Command| {
            c.args(["--listen", "127.0.0.1:0", "--data-dir"])
                .arg(dir)
                .args(["--ai-url", model, "--ai-model", "thinking"]);
        };
        let mut command = match self {
            Engine::Original => {
                let mut c = Command::new("bash");
                c.arg(format!("{repo}/worker/bench/original.sh")).arg(dir);
                c
            }
            Engine::Floor => {
                let mut c = Command::new("bash");
                c.arg(format!("{repo}/worker/bench/original.sh"))
                    .arg(dir)
                    .arg("floor.jsonc");
                c
            }
            Engine::Serve => {
                let mut c = Command::new(support::duet_bin());
                c.arg("serve");
                flags(&mut c);
                c
            }
            Engine::Worker => {
                let mut c = Command::new("bash");
                c.arg(format!("{repo}/worker/dev.sh"))
                    .env("DUET_BIN", support::duet_bin());
                flags(&mut c);
                c
            }
        };
        let mut child = command
            .env("DUET_LOG", "error")
            .env("WRANGLER_LOG", "error")
            .envs(support::NO_LIMITS.map(|k| (k, "0")))
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let Some(addr) = line.trim().strip_prefix("duet: listening on http://") else {
            support::stop(&mut child);
            anyhow::bail!("{} did not start: {line:?}", self.name());
        };
        Ok((child, addr.to_string()))
    }

    /// Resident memory of the engine's own process, in KiB: `duet serve`,
    /// or the workerd below wrangler (not wrangler's node, nor the
    /// stand-in's duet serve).
    fn rss_kib(self, pid: u32) -> u64 {
        if self == Engine::Serve {
            return support::rss_kib(pid);
        }
        support::descendants(pid)
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim_end().starts_with("workerd"))
            })
            .map(support::rss_kib)
            .sum()
    }
}

/// What one engine measured.
#[derive(Default)]
struct Figures {
    fanout: Vec<(&'static str, Duration, Duration, usize)>,
    exec: Option<Duration>,
    /// The worker's own phases (Server-Timing): name, median ms.
    phases: Vec<(String, f64)>,
    /// Empty, N rooms x 1 socket, N rooms x M sockets (KiB).
    memory: Option<(u64, u64, u64)>,
}

pub(crate) async fn engines_figures(http: &reqwest::Client) -> anyhow::Result<()> {
    let model = thinking_model()?;
    let rooms = std::env::var("DUET_BENCH_ROOMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(IDLE_ROOMS);
    // DUET_BENCH_ENGINES=original,worker (say) measures only those.
    let picked = std::env::var("DUET_BENCH_ENGINES").unwrap_or_default();
    let engines = [
        Engine::Original,
        Engine::Floor,
        Engine::Serve,
        Engine::Worker,
    ];
    let mut running = Vec::new();
    for engine in engines
        .into_iter()
        .filter(|e| picked.is_empty() || picked.split(',').any(|p| p.trim() == e.key()))
    {
        let dir = tempfile::tempdir()?;
        match engine.start(dir.path(), &model) {
            Ok((child, addr)) => running.push((engine, child, addr, dir)),
            Err(e) => {
                stop_all(&mut running);
                return Err(e);
            }
        }
    }
    let measured = measure_all(http, &running, rooms).await;
    stop_all(&mut running);
    print(&measured?, rooms);
    Ok(())
}

fn stop_all(running: &mut [(Engine, Child, String, tempfile::TempDir)]) {
    for (_, child, _, _) in running {
        support::stop(child);
    }
}

/// Every engine runs at once: memory first (each still empty), then the
/// fan-out in rounds that take turns among the engines, so that load on
/// the machine that comes and goes falls on all of them alike, then exec.
async fn measure_all(
    http: &reqwest::Client,
    running: &[(Engine, Child, String, tempfile::TempDir)],
    rooms: usize,
) -> anyhow::Result<Vec<(Engine, Figures)>> {
    let mut all = Vec::new();
    for (engine, child, addr, _) in running {
        // The floor sends nothing on connect: no memory figures (it keeps no room).
        let memory = if *engine == Engine::Floor {
            None
        } else {
            Some(idle_memory(*engine, child.id(), addr, rooms).await?)
        };
        all.push((
            *engine,
            Figures {
                memory,
                ..Figures::default()
            },
        ));
    }
    let mut samples: BTreeMap<(usize, usize), (Vec<Duration>, usize)> = BTreeMap::new();
    for _ in 0..FANOUT_ROUNDS {
        for (e, (engine, _, addr, _)) in running.iter().enumerate() {
            for (k, &(_, deltas, clients)) in fanout_kinds(*engine).iter().enumerate() {
                let room = format!("engines-fan{}-{clients}", u8::from(deltas));
                // To the room: answered at once, so the client sends each on the
                // same connection, as it does to the original engine's room.
                let per_round = FANOUT_MESSAGES / FANOUT_ROUNDS;
                let fanout =
                    fanout_samples(http, addr, &room, deltas, clients, per_round, "room").await?;
                let entry = samples.entry((e, k)).or_default();
                entry.0.extend(fanout.samples);
                entry.1 = fanout.last_frame;
            }
        }
    }
    for ((e, k), (mut taken, last_frame)) in samples {
        taken.sort();
        let (engine, figures) = &mut all[e];
        figures.fanout.push((
            fanout_kinds(*engine)[k].0,
            percentile(&taken, 0.5),
            percentile(&taken, 0.99),
            last_frame,
        ));
    }
    // Exec in rounds the engines take turns in too: the ratio's two sides
    // see the same machine.
    let mut execs: BTreeMap<usize, ExecSamples> = BTreeMap::new();
    for round in 0..EXEC_ROUNDS {
        for (e, (engine, _, addr, _)) in running.iter().enumerate() {
            if matches!(engine, Engine::Serve | Engine::Worker) {
                let taken = execs.entry(e).or_default();
                exec_samples(http, addr, round == 0, taken).await?;
            }
        }
    }
    for (e, mut taken) in execs {
        let (_, figures) = &mut all[e];
        taken.took.sort();
        figures.exec = Some(percentile(&taken.took, 0.5));
        figures.phases = taken
            .phases
            .into_iter()
            .map(|(name, mut d)| {
                d.sort_by(f64::total_cmp);
                (name, d[d.len() / 2])
            })
            .collect();
    }
    Ok(all)
}

/// Each engine's fan-out with FANOUT_CLIENTS clients, then with one: a
/// message's way in (the POST, the store) without the fan-out, the part no
/// way of sending can take away.
fn fanout_kinds(engine: Engine) -> &'static [(&'static str, bool, usize)] {
    if matches!(engine, Engine::Original | Engine::Floor) {
        &[
            ("full states", false, FANOUT_CLIENTS),
            ("1 client", false, 1),
        ]
    } else {
        &[
            ("full states", false, FANOUT_CLIENTS),
            ("deltas", true, FANOUT_CLIENTS),
            ("deltas, 1 client", true, 1),
        ]
    }
}

/// What one engine's execs took, and each phase its `Server-Timing` names.
#[derive(Default)]
struct ExecSamples {
    took: Vec<Duration>,
    phases: BTreeMap<String, Vec<f64>>,
}

/// One round of `POST /sandbox/exec {"cmd":"true"}` on a warm room (the
/// first warms it with 20 untimed calls), added to `taken`.
async fn exec_samples(
    http: &reqwest::Client,
    addr: &str,
    first: bool,
    taken: &mut ExecSamples,
) -> anyhow::Result<()> {
    let url = format!("http://{addr}/api/rooms/engines-exec/sandbox/exec");
    let body = serde_json::json!({"cmd": "true"});
    if first {
        for _ in 0..20 {
            http.post(&url).json(&body).send().await?.bytes().await?;
        }
    }
    for _ in 0..EXECS / EXEC_ROUNDS {
        let start = Instant::now();
        let res = http.post(&url).json(&body).send().await?;
        anyhow::ensure!(res.status() == 200, "exec answered {}", res.status());
        let timing = res
            .headers()
            .get("server-timing")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        res.bytes().await?;
        let took = start.elapsed();
        taken.took.push(took);
        let spans = server_timing(&timing);
        let span = |name: &str| spans.iter().find(|(n, _)| n == name).map(|(_, d)| *d);
        // What the spans leave out: the Durable Object's own work, and
        // everything before and after it (the Worker, workerd's ingress).
        if let (Some(room), Some(sandbox), Some(cwd), Some(lobby)) =
            (span("room"), span("sandbox"), span("cwd"), span("lobby"))
        {
            // `store`: waiting for the command's record to be durable.
            let own = room - sandbox - cwd - lobby - span("store").unwrap_or(0.0);
            let phases = &mut taken.phases;
            phases
                .entry("room's own work".into())
                .or_default()
                .push(own);
            phases
                .entry("outside the room".into())
                .or_default()
                .push(ms(took) - room);
        }
        for (name, dur) in spans {
            taken.phases.entry(name).or_default().push(dur);
        }
    }
    Ok(())
}

/// `a;dur=1.5, b;dur=2` as (name, ms) pairs.
fn server_timing(header: &str) -> Vec<(String, f64)> {
    header
        .split(',')
        .filter_map(|entry| {
            let mut parts = entry.trim().split(';');
            let name = parts.next()?.trim().to_string();
            let dur = parts.find_map(|p| p.trim().strip_prefix("dur="))?;
            Some((name, dur.parse().ok()?))
        })
        .collect()
}

/// The engine's memory empty, with `rooms` rooms of one idle socket, then
/// of PER_ROOM sockets each; the sockets close afterwards.
async fn idle_memory(
    engine: Engine,
    pid: u32,
    addr: &str,
    rooms: usize,
) -> anyhow::Result<(u64, u64, u64)> {
    tokio::time::sleep(Duration::from_secs(2)).await;
    let empty = engine.rss_kib(pid);
    let mut held = connect(addr, rooms, 0..1).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let one = engine.rss_kib(pid);
    held.extend(connect(addr, rooms, 1..PER_ROOM).await?);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let full = engine.rss_kib(pid);
    for mut ws in held {
        let _ = ws.close(None).await;
    }
    Ok((empty, one, full))
}

/// Sockets `users` of each of `rooms` idle rooms, each past its first frame.
async fn connect(
    addr: &str,
    rooms: usize,
    users: std::ops::Range<usize>,
) -> anyhow::Result<Vec<support::Ws>> {
    let urls: Vec<String> = (0..rooms)
        .flat_map(|r| {
            users
                .clone()
                .map(move |u| format!("ws://{addr}/api/rooms/idle-{r}/ws?user=u{u}&deltas=1"))
        })
        .collect();
    let sockets: Vec<anyhow::Result<support::Ws>> = stream::iter(urls)
        .map(|url| async move {
            let mut ws = support::connect(url).await?;
            ws.next().await;
            anyhow::Ok(ws)
        })
        .buffer_unordered(16)
        .collect()
        .await;
    sockets.into_iter().collect()
}

fn print(all: &[(Engine, Figures)], rooms: usize) {
    // Without the original (DUET_BENCH_ENGINES left it out) the ratios are inf.
    let (base50, base99) = all
        .iter()
        .find(|(e, _)| *e == Engine::Original)
        .and_then(|(_, f)| f.fanout.first())
        .map_or((Duration::ZERO, Duration::ZERO), |&(_, p50, p99, _)| {
            (p50, p99)
        });
    println!(
        "engines side by side: {FANOUT_MESSAGES} messages to {FANOUT_CLIENTS} clients of one room, \
         each to the room, in {FANOUT_ROUNDS} rounds the engines take turns in"
    );
    println!(
        "{:<40} {:>9} {:>9} {:>8} {:>8} {:>11}",
        "fan-out: POST to the last client's frame",
        "p50 ms",
        "p99 ms",
        "p50/orig",
        "p99/orig",
        "last frame"
    );
    for (engine, figures) in all {
        for &(kind, p50, p99, frame) in &figures.fanout {
            println!(
                "{:<40} {:>9.3} {:>9.3} {:>7.2}x {:>7.2}x {:>9} B",
                format!("{}, {kind}", engine.name()),
                ms(p50),
                ms(p99),
                ms(p50) / ms(base50),
                ms(p99) / ms(base99),
                frame
            );
        }
    }
    println!(
        "{:<40} (targets: duet serve p99 <= 0.2x, the worker p50 <= 0.5x)",
        ""
    );
    let exec = |e: Engine| {
        all.iter()
            .find(|(x, _)| *x == e)
            .and_then(|(_, f)| f.exec.map(|d| (d, f)))
    };
    if let (Some((serve, _)), Some((worker, figures))) = (exec(Engine::Serve), exec(Engine::Worker))
    {
        println!();
        println!("POST /sandbox/exec {{\"cmd\":\"true\"}}, warm room, {EXECS} calls: median");
        println!("{:<40} {:>9.3} ms", Engine::Serve.name(), ms(serve));
        println!(
            "{:<40} {:>9.3} ms   ({:.2}x duet serve; target: <= 5x)",
            Engine::Worker.name(),
            ms(worker),
            ms(worker) / ms(serve)
        );
        println!(
            "  the worker's Server-Timing (medians): room = the Durable Object's whole; \
             sandbox = the command through the stand-in (its hop and duet serve's exec; sandbox-start: until the stand-in said it started, sandbox-run: from then to its end); store = waiting for the record to be durable; \
             cwd = asking the shell's directory in a second hop (0 when the command's own exec told it); lobby = the room list; \
             room's own work = room less those; outside the room = the call less room"
        );
        for (name, median) in &figures.phases {
            println!("{:<40} {:>9.3} ms", format!("  {name}"), median);
        }
    }
    println!();
    println!(
        "idle memory of the engine's own process ({rooms} rooms; duet serve, else workerd; per room: with its first socket)"
    );
    println!(
        "{:<40} {:>9} {:>11} {:>11} {:>10} {:>10}",
        "",
        "empty MiB",
        "1/room MiB",
        format!("{PER_ROOM}/room MiB"),
        "KiB/room",
        "KiB/socket"
    );
    for (engine, figures) in all {
        let Some((empty, one, full)) = figures.memory else {
            continue;
        };
        let mib = |k: u64| k as f64 / 1024.0;
        let per_room = one.saturating_sub(empty) as f64 / rooms.max(1) as f64;
        let per_socket = full.saturating_sub(one) as f64 / (rooms * (PER_ROOM - 1)).max(1) as f64;
        println!(
            "{:<40} {:>9.1} {:>11.1} {:>11.1} {:>10.1} {:>10.1}",
            engine.name(),
            mib(empty),
            mib(one),
            mib(full),
            per_room,
            per_socket
        );
    }
}
