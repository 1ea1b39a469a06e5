//! What the benchmarks share: percentiles, the report line, and a real
//! `duet serve` on a free loopback port.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

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

/// Starts the built `duet serve` on a free loopback port with `dir` and
/// `args`; answers the process and its `host:port`.
pub fn serve(dir: &std::path::Path, args: &[&str]) -> anyhow::Result<(Child, String)> {
    let mut server = Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
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
