//! Figures of the terminal client (issue 4): the time to draw one frame
//! with 10 and with 10,000 messages of history (ratatui's TestBackend),
//! plain and markdown-heavy (issue 11: headings, lists, tables, code with
//! syntax colour), with their ratio; what loading the code grammars and
//! colouring a block cost; a frame while a markdown reply streams; the
//! resident memory with 10,000 messages, and, when tmux is installed, the
//! CPU time of an idle client over 30 s (the real binary joined to a real
//! `duet serve`).
//!
//! Run: `cargo bench --bench tui` (set `DUET_BENCH_IDLE=0` to skip the
//! 30-second idle measurement).
//!
//! Measuring idle CPU by hand: start `duet` in a terminal, then
//! `pid=$(pgrep -n -x duet); a=$(awk '{print $14+$15}' /proc/$pid/stat);
//! sleep 30; b=$(awk '{print $14+$15}' /proc/$pid/stat);
//! echo "$(( (b-a) * 1000 / $(getconf CLK_TCK) )) ms of CPU in 30 s"`.

use duet::protocol::{DuetMessage, Role, RoomState, ServerFrame};
use duet::tui::app::{App, Msg, Session};
use duet::tui::theme::Theme;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tmux harness of the end-to-end tests.
#[path = "../tests/it/common/tmux.rs"]
#[allow(dead_code)]
mod tmux;

fn session() -> Session {
    Session {
        server: "http://127.0.0.1:8787".into(),
        room: "bench".into(),
        name: "ada".into(),
        connection_id: "c1".into(),
        backend: duet::client::join::Backend::Embedded { data_dir: None },
        folder: None,
    }
}

fn history(n: usize) -> Vec<DuetMessage> {
    (0..n)
        .map(|i| DuetMessage {
            client_id: None,
            id: (i + 1).to_string(),
            role: if i % 3 == 2 { Role::Agent } else { Role::User },
            user_id: Some(format!("person{}", i % 5)),
            text: format!(
                "message {i}: some words to wrap across the pane, enough of them to take two lines at 60 columns\n```\ncode line {i}\n```"
            ),
            ts: 1_767_348_000_000 + i as i64 * 1000,
            runs: None,
            ..DuetMessage::default()
        })
        .collect()
}

/// An agent reply with every markdown element and a code block.
fn markdown_reply(i: usize) -> String {
    format!(
        "## Step {i}\n\nThe **build** is *almost* done; see [the notes](https://example.com/{i}).\n\n\
         1. compile with `cargo build --release`, which takes a while\n2. run the tests\n   - unit\n   - end to end\n\n\
         > a quoted remark that is long enough to wrap once at sixty columns or so\n\n\
         | file | lines | owner |\n|:--|--:|:--|\n| src/tui/markdown.rs | 800 | render |\n| src/tui/app.rs | 384 | flow |\n\n\
         ```rust\nfn step_{i}(x: u32) -> u32 {{\n    // double it\n    let y = x * 2; println!(\"{{y}} and a long line to wrap behind the mark\");\n    y\n}}\n```"
    )
}

/// People's questions and markdown replies, alternating.
fn markdown_history(n: usize) -> Vec<DuetMessage> {
    (0..n)
        .map(|i| {
            let agent = i % 2 == 1;
            DuetMessage {
                id: (i + 1).to_string(),
                role: if agent { Role::Agent } else { Role::User },
                user_id: (!agent).then(|| format!("person{}", i % 5)),
                text: if agent {
                    markdown_reply(i)
                } else {
                    format!("question {i}: how does `step_{i}` work?")
                },
                ts: 1_767_348_000_000 + i as i64 * 1000,
                ..DuetMessage::default()
            }
        })
        .collect()
}

fn app_with(n: usize) -> App {
    app_of(history(n))
}

fn app_of(messages: Vec<DuetMessage>) -> App {
    let mut app = App::new(session(), Theme::DARK, time::UtcOffset::UTC, 0);
    app.update(Msg::Resize(120, 40));
    app.update(Msg::Socket(duet::client::socket::SocketEvent::Frame(
        Box::new(ServerFrame::State {
            state: RoomState {
                terminal: None,
                messages,
                execs: vec![],
                shell: None,
                processes: vec![],
                ports: vec![],
                checkpoints: vec![],
                ..Default::default()
            },
        }),
    )));
    app
}

/// Loading the grammars; colouring a 60-line block with its grammar's
/// patterns not yet compiled, another one after, and the first again.
fn highlight_costs() -> [Duration; 4] {
    let block = |seed: &str| {
        let code: String = (0..60)
            .map(|i| format!("    let {seed}_{i} = compute(\"{i}\", {i}); // note {i}\n"))
            .collect();
        format!("fn {seed}() {{\n{code}}}\n")
    };
    let timed = |f: &dyn Fn()| {
        let start = Instant::now();
        f();
        start.elapsed()
    };
    let (first, other) = (block("first"), block("other"));
    [
        timed(&duet::tui::highlight::warm_up),
        timed(&|| drop(duet::tui::highlight::highlight("rust", &first))),
        timed(&|| drop(duet::tui::highlight::highlight("rust", &other))),
        timed(&|| drop(duet::tui::highlight::highlight("rust", &first))),
    ]
}

/// Frames while a markdown reply with a 60-line code block streams: a
/// spinner frame (same text) and a frame after each of 80 deltas (the
/// reply and its code block grow).
fn streaming_frames() -> (Duration, Duration) {
    use duet::protocol::AiPhase;
    let frame = |phase, text: Option<&str>| {
        Msg::Socket(duet::client::socket::SocketEvent::Frame(Box::new(
            ServerFrame::Ai {
                phase,
                turn_id: "t1".into(),
                text: text.map(str::to_string),
                error: None,
                by_connection: None,
            },
        )))
    };
    let mut app = app_of(markdown_history(4));
    app.update(frame(AiPhase::Start, None));
    let code: String = (0..60)
        .map(|i| format!("    let streamed_{i} = compute(\"{i}\", {i}); // note {i}\n"))
        .collect();
    let reply = format!(
        "{}\n\n```rust\nfn streamed() {{\n{code}}}\n```",
        markdown_reply(99)
    );
    let pieces: Vec<String> = reply
        .chars()
        .collect::<Vec<_>>()
        .chunks(reply.chars().count() / 80 + 1)
        .map(|c| c.iter().collect())
        .collect();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test backend");
    let mut grow = Vec::new();
    for piece in &pieces {
        app.update(frame(AiPhase::Delta, Some(piece)));
        let start = Instant::now();
        terminal
            .draw(|f| duet::tui::view::draw(f, &app))
            .expect("draw");
        grow.push(start.elapsed());
    }
    let mut same: Vec<Duration> = (0..200)
        .map(|_| {
            let start = Instant::now();
            terminal
                .draw(|f| duet::tui::view::draw(f, &app))
                .expect("draw");
            start.elapsed()
        })
        .collect();
    grow.sort();
    same.sort();
    (same[same.len() / 2], grow[grow.len() / 2])
}

/// Median and p99 of `runs` draws (after one warm-up draw).
fn time_frames(app: &App, runs: usize) -> (Duration, Duration, Duration) {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test backend");
    let cold = Instant::now();
    terminal
        .draw(|f| duet::tui::view::draw(f, app))
        .expect("draw");
    let cold = cold.elapsed();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            terminal
                .draw(|f| duet::tui::view::draw(f, app))
                .expect("draw");
            start.elapsed()
        })
        .collect();
    times.sort();
    (cold, times[runs / 2], times[runs * 99 / 100])
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    // `cargo bench` passes --bench; any other argument is a filter we ignore.
    let [load, first, other, again] = highlight_costs();
    println!(
        "code grammars: loaded in {load:?}; a 60-line Rust block coloured in {first:?} (its patterns compiled), another in {other:?}, the first again (remembered) in {again:?}"
    );
    let before = rss_kib();
    let small = app_with(10);
    let (cold, median, p99) = time_frames(&small, 500);
    println!("frame, 10 messages:     first {cold:?}, median {median:?}, p99 {p99:?}");
    let large = app_with(10_000);
    let after_build = rss_kib();
    let (plain_first, plain_median, p99) = time_frames(&large, 500);
    println!("frame, 10,000 messages: first {plain_first:?}, median {plain_median:?}, p99 {p99:?}");
    println!(
        "resident memory: {} KiB before, {} KiB with 10,000 messages (+{} KiB), {} KiB after drawing",
        before,
        after_build,
        after_build.saturating_sub(before),
        rss_kib()
    );
    drop((small, large));
    let small = app_of(markdown_history(10));
    let (cold, small_median, p99) = time_frames(&small, 500);
    println!(
        "frame, 10 markdown messages:     first {cold:?}, median {small_median:?}, p99 {p99:?}"
    );
    let large = app_of(markdown_history(10_000));
    let (md_first, md_median, p99) = time_frames(&large, 500);
    println!(
        "frame, 10,000 markdown messages: first {md_first:?}, median {md_median:?}, p99 {p99:?}"
    );
    // The first frame renders the cells in view; later ones reuse them.
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!(
        "markdown / plain, 10,000 messages: first frame {:.1}, median frame {:.2}",
        ratio(md_first, plain_first),
        ratio(md_median, plain_median)
    );
    drop((small, large));
    let (same, grow) = streaming_frames();
    println!(
        "frame while a markdown reply streams: median {same:?} (spinner only), {grow:?} after a delta"
    );
    if std::env::var("DUET_BENCH_IDLE").as_deref() != Ok("0") {
        match idle_cpu() {
            Ok(ms) => println!(
                "idle client: {ms} ms of CPU time in 30 s (10 ms resolution), connected to a real backend"
            ),
            Err(why) => println!("idle client: not measured ({why})"),
        }
    }
}

/// CPU time of a real client, connected to a real backend, idle for 30 s.
fn idle_cpu() -> Result<u64, String> {
    let bin = env!("CARGO_BIN_EXE_duet");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        listener.local_addr().map_err(|e| e.to_string())?.port()
    };
    let mut server = Command::new(bin)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(dir.path().join("server"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let tmux = tmux::Tmux::try_new(dir.path())?;
    let env = [(
        "DUET_DATA_DIR",
        dir.path().join("client").display().to_string(),
    )];
    let args = format!("--server http://127.0.0.1:{port} --room idle --name bench");
    let result = (|| {
        std::thread::sleep(Duration::from_secs(1));
        tmux.start("idle", &env, &args);
        std::thread::sleep(Duration::from_secs(3));
        let mut pid = tmux.display("idle", "#{pane_pid}");
        // The pane's process may be a shell that started duet as its child.
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() != "duet" {
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .map_err(|e| e.to_string())?;
            pid = children
                .split_whitespace()
                .next()
                .ok_or("the client is not running")?
                .to_string();
        }
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() != "duet" {
            return Err(format!("pane runs {comm:?}, not duet"));
        }
        let cpu = || -> Result<u64, String> {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map_err(|e| format!("client not running: {e}"))?;
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().collect())
                .unwrap_or_default();
            let ticks: u64 = fields
                .get(11..13)
                .ok_or("bad /proc stat")?
                .iter()
                .filter_map(|v| v.parse::<u64>().ok())
                .sum();
            // Clock ticks are 10 ms on Linux (CLK_TCK 100).
            Ok(ticks * 10)
        };
        if !tmux.screen("idle").contains("● connected") {
            return Err("the client did not connect".into());
        }
        let a = cpu()?;
        std::thread::sleep(Duration::from_secs(30));
        let b = cpu()?;
        Ok(b - a)
    })();
    drop(tmux);
    let _ = server.kill();
    let _ = server.wait();
    result
}
