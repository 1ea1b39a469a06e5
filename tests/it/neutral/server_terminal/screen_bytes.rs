//! A figure, not a test (ignored; run it by name with `--ignored
//! --nocapture`): the bytes a socket is sent for the same output as `data`
//! frames and as `screen` frames, for a `top`-like redraw loop and for a
//! flood (`yes | head -c 1M`), on an 80×24 terminal.

use super::*;

/// Bytes of `duet_term` frames of `phase` for `term_id` read until `done`
/// holds of what was read; the frames' text.
async fn bytes_until(
    ws: &mut Ws,
    term_id: &str,
    phase: &str,
    mut done: impl FnMut(&Value) -> bool,
) -> (usize, usize) {
    let (mut bytes, mut frames) = (0, 0);
    loop {
        let text = ws.next_text().await;
        let f: Value = serde_json::from_str(&text).unwrap();
        if f["type"] == "duet_term" && f["phase"] == phase && f["termId"] == term_id {
            bytes += text.len();
            frames += 1;
            if done(&f) {
                return (bytes, frames);
            }
        }
    }
}

async fn measure(server: &Server, room: &str, cmd: &str) {
    let mut data = server.joined(room, "user=bytes").await;
    let answer = data
        .rpc(1, "term_open", json!([{"cols": 80, "rows": 24}]))
        .await;
    let term_id = answer["result"]["termId"].as_str().unwrap().to_string();
    let mut screen = server.joined(room, "user=screen").await;
    let answer = screen.rpc(1, "term_open", json!([{"screen": true}])).await;
    assert_eq!(answer["success"], true);
    // Past the prompt and the first full frame.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let input = json!({"type":"duet_term_input","termId":term_id,"data":b64(format!("{cmd}\r").as_bytes())});
    data.send(input).await;
    let mut tail = Vec::new();
    let (data_bytes, data_frames) = bytes_until(&mut data, &term_id, "data", |f| {
        tail.extend_from_slice(&unb64(&f["data"]));
        let keep = tail.len().saturating_sub(256);
        tail.drain(..keep);
        String::from_utf8_lossy(&tail).contains("BENCH-2\r\n")
    })
    .await;
    let (screen_bytes, screen_frames) = bytes_until(&mut screen, &term_id, "screen", |f| {
        f["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["spans"][0]["t"] == "BENCH-2")
    })
    .await;
    println!(
        "{room}: data {data_bytes} bytes in {data_frames} frames; screen {screen_bytes} bytes in {screen_frames} frames"
    );
}

#[tokio::test]
#[ignore = "a figure: run by name with --ignored --nocapture"]
async fn screen_frames_bytes_against_data_frames() {
    let (server, _dir) = Server::fresh().await;
    let top = concat!(
        "clear; for i in $(seq 1 100); do printf '\\e[H'; for r in $(seq 1 20); do ",
        "printf '\\e[3%dmproc %2d cpu %5d mem %5d\\e[0m\\e[K\\n' $((r%7)) $r $RANDOM $RANDOM; ",
        "done; sleep 0.05; done; echo BENCH-$((1+1))"
    );
    measure(&server, "bytes-top", top).await;
    measure(
        &server,
        "bytes-yes",
        "yes | head -c 1000000; echo BENCH-$((1+1))",
    )
    .await;
}
