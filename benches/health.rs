//! `/health` latency while two rooms run a fork bomb and a memory bomb,
//! beside the same with the machine idle, in one run of a real `duet
//! serve`. `cargo bench --bench health`.

mod support;

use std::time::{Duration, Instant};
use support::report;

const SAMPLES: usize = 500;

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir()?;
    let (mut server, addr) =
        support::serve(dir.path(), &["--processes", "64", "--memory-mb", "128"])?;
    let base = format!("http://{addr}");
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(async {
        let http = reqwest::Client::new();
        let health = |http: reqwest::Client, base: String| async move {
            let mut samples = Vec::with_capacity(SAMPLES);
            for _ in 0..SAMPLES {
                let start = Instant::now();
                http.get(format!("{base}/health"))
                    .send()
                    .await?
                    .text()
                    .await?;
                samples.push(start.elapsed());
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            anyhow::Ok(samples)
        };
        let idle = health(http.clone(), base.clone()).await?;
        let bombs = [
            ("fork", "b() { b | b & }; b; sleep 8"),
            (
                "memory",
                "while :; do bash -c 'x=$(head -c 300000000 /dev/zero | tr \"\\0\" x)'; done",
            ),
        ];
        let mut running = Vec::new();
        for (room, cmd) in bombs {
            let req = http
                .post(format!("{base}/api/rooms/{room}/sandbox/exec"))
                .json(&serde_json::json!({"cmd": cmd, "timeoutMs": 8000}));
            running.push(tokio::spawn(req.send()));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let loaded = health(http.clone(), base.clone()).await?;
        for task in running {
            if let Ok(Ok(answer)) = task.await {
                let body: serde_json::Value = answer.json().await.unwrap_or_default();
                let r = &body["result"];
                println!(
                    "bomb ran {} ms: exit {}, timedOut {}",
                    r["duration"], r["exitCode"], r["timedOut"]
                );
            }
        }
        anyhow::Ok((idle, loaded))
    });
    let _ = server.kill();
    let (idle, loaded) = result?;
    println!("{SAMPLES} GET /health each");
    report("idle machine", idle);
    report("fork bomb + memory bomb in two rooms", loaded);
    Ok(())
}
