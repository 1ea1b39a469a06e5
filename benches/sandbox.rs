//! How much a command in a warm sandbox costs next to a bare fork+exec of
//! `true`, measured in the same run. `cargo bench --bench sandbox`.

use duet::sandbox::local::{Limits, RoomSandbox, SandboxPlace};
use duet::sandbox::{ExecSpec, Sandbox};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{ms, report};

mod support;

const CALLS: usize = 1000;

fn main() -> anyhow::Result<()> {
    let exe = std::env::var("DUET_HELPER_EXE").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/duet").to_string()
    });
    // SAFETY: set before the runtime and any sandbox start.
    unsafe { std::env::set_var("DUET_HELPER_EXE", &exe) };
    let runtime = tokio::runtime::Runtime::new()?;
    let dir = tempfile::tempdir()?;

    let bare: Vec<Duration> = (0..CALLS)
        .map(|_| {
            let start = Instant::now();
            let _ = std::process::Command::new("true").status();
            start.elapsed()
        })
        .collect();

    let sandboxed = runtime.block_on(async {
        let sb = RoomSandbox::new(
            SandboxPlace::own(
                "bench",
                duet::sandbox::local::workspace_dir(dir.path(), "bench"),
                duet::sandbox::local::room_uid(dir.path(), 1),
            ),
            Arc::new(Limits::default()),
        );
        let spec = ExecSpec {
            cmd: "true".into(),
            timeout: Duration::from_secs(10),
            ..ExecSpec::default()
        };
        let mut samples = Vec::with_capacity(CALLS);
        for i in 0..=CALLS {
            let start = Instant::now();
            sb.exec(format!("x{i}"), spec.clone(), Box::new(|_| {}))
                .await?;
            if i > 0 {
                samples.push(start.elapsed()); // the first call starts the sandbox
            }
        }
        anyhow::Ok(samples)
    })?;

    println!("{CALLS} calls each");
    let (base, _) = report("fork+exec of `true`", bare);
    let (ours, _) = report("`true` in a warm sandbox", sandboxed);
    println!("difference of medians: {:+.3} ms", ms(ours) - ms(base));
    Ok(())
}
