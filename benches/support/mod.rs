//! What the benchmarks share: percentiles, the report line, and a real
//! backend on a free loopback port: `duet serve`, or with
//! `DUET_BENCH_BACKEND=worker` the local Cloudflare stack (worker/dev.sh).
#![allow(dead_code)]

#[path = "../../tests/it/common/procs.rs"]
mod procs;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A benchmark's WebSocket client.
pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects a benchmark's WebSocket client to `url`: a 4 KiB read buffer
/// (tungstenite's default of 128 KiB is zeroed before every read: with 100
/// clients, that was most of the client's CPU, on the same cores as the
/// server it measures), nothing held back when writing.
pub async fn connect(url: String) -> anyhow::Result<Ws> {
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(4096)
        .write_buffer_size(0);
    Ok(
        tokio_tungstenite::connect_async_with_config(url, Some(config), true)
            .await?
            .0,
    )
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Prints the median and p99 of `samples`; answers them.
pub fn report(name: &str, mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let (median, p99) = (percentile(&samples, 0.5), percentile(&samples, 0.99));
    println!(
        "{name:<48} median {:>8.3} ms   p99 {:>8.3} ms   ({} samples)",
        ms(median),
        ms(p99),
        samples.len()
    );
    (median, p99)
}

/// The limit variables of `duet serve`; 0 turns each off.
pub const NO_LIMITS: [&str; 8] = [
    "DUET_SOCKET_FRAMES_PER_SEC",
    "DUET_SOCKET_BYTES_PER_SEC",
    "DUET_SOCKET_MESSAGES_PER_MIN",
    "DUET_SOCKET_COMMANDS_PER_MIN",
    "DUET_ROOM_MESSAGES_PER_MIN",
    "DUET_ROOM_COMMANDS_PER_MIN",
    "DUET_MAX_ROOM_SOCKETS",
    "DUET_MAX_SOCKETS",
];

/// Whether `DUET_BENCH_BACKEND=worker` asks for the local worker.
pub fn worker_backend() -> bool {
    std::env::var("DUET_BENCH_BACKEND").as_deref() == Ok("worker")
}

/// The `duet` binary the benches run: `DUET_BENCH_BIN` (another build,
/// such as a baseline's, measured by this harness), else this build's.
pub fn duet_bin() -> std::ffi::OsString {
    std::env::var_os("DUET_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_duet").into())
}

/// Starts the backend (`duet serve`, or worker/dev.sh) on a free loopback
/// port with `dir` and `args`; answers the process and its `host:port`.
pub fn serve(dir: &std::path::Path, args: &[&str]) -> anyhow::Result<(Child, String)> {
    let mut command = if worker_backend() {
        let mut c = Command::new("bash");
        c.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/worker/dev.sh"))
            .env("DUET_BIN", duet_bin())
            .env("WRANGLER_LOG", "error");
        c
    } else {
        let mut c = Command::new(duet_bin());
        c.arg("serve");
        c
    };
    let mut server = command
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .args(args)
        .env("DUET_LOG", "error")
        // The benches measure the server flat out: no rate limits, no caps.
        .envs(NO_LIMITS.map(|k| (k, "0")))
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = server
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let addr = line
        .trim()
        .trim_start_matches("duet: listening on http://")
        .to_string();
    Ok((server, addr))
}

/// Stops a backend started by `serve`: SIGTERM (worker/dev.sh then stops
/// its whole stack), then waits.
pub fn stop(child: &mut Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
}

/// Resident memory of process `pid` and all its descendants, in KiB.
pub fn tree_rss_kib(pid: u32) -> u64 {
    rss_kib(pid)
        + procs::descendants(pid)
            .into_iter()
            .map(rss_kib)
            .sum::<u64>()
}

/// Resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// Prints the median throughput of transfers of `bytes` that took
/// `samples`, with the slowest and fastest; answers the median in MiB/s.
pub fn report_rate(name: &str, bytes: usize, mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    let rate = |d: Duration| bytes as f64 / (1024.0 * 1024.0) / d.as_secs_f64();
    let median = rate(percentile(&samples, 0.5));
    println!(
        "{name:<48} median {median:>9.1} MiB/s   ({:.1}–{:.1}, {} runs)",
        rate(samples[samples.len() - 1]),
        rate(samples[0]),
        samples.len()
    );
    median
}

/// The processes below `pid`, children first.
pub fn descendants(pid: u32) -> Vec<u32> {
    procs::descendants(pid)
}

/// Raises this process's open-files limit to its hard limit.
pub fn raise_open_files() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// Resident memory of the backend, in KiB: `duet serve`'s own process, or
/// the worker's whole stack (node, workerd, the stand-in's duet serve).
pub fn backend_rss_kib(pid: u32) -> u64 {
    if worker_backend() {
        tree_rss_kib(pid)
    } else {
        rss_kib(pid)
    }
}
