//! The shared terminal under a flood of output (`cat` of a big log, `yes`):
//! what people send it (a Ctrl+C, a resize) is not kept waiting behind the
//! output, and a viewer that falls behind the flood (it is sent a fresh
//! snapshot instead of what it missed) still has the terminal's size: a
//! resize among what it missed is said before the snapshot (issue 23's
//! pairing session: vim garbled on a screen that kept an old size).
//! duet serve only: on Cloudflare a slow reader is the platform's to
//! buffer or drop.

use crate::common::{Server, b64, unb64};
use serde_json::{Value, json};

/// A flood that would take minutes, then a line it never gets to print
/// when it is interrupted (its echo reads otherwise).
const FLOOD: &str =
    "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 2000000000; echo FLOOD-$((1+1))-DONE";
const END: &str = "FLOOD-2-DONE";

/// The bytes of a terminal output frame.
fn output(frame: &Value) -> Option<Vec<u8>> {
    (frame["type"] == "duet_term" && frame["phase"] == "data").then(|| unb64(&frame["data"]))
}

#[tokio::test]
async fn ctrl_c_stops_a_flood_of_output_at_once() {
    let (server, _dir) = Server::fresh().await;
    let mut ws = server.joined("flood", "user=ann").await;
    let answer = ws
        .rpc(1, "term_open", json!([{"cols": 100, "rows": 30}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let term_id = answer["result"]["termId"].as_str().unwrap().to_string();
    let keys =
        |keys: &str| json!({"type":"duet_term_input","termId":term_id,"data":b64(keys.as_bytes())});
    ws.send(keys(&format!("{FLOOD}\r"))).await;
    // Well into the flood (past the command's echo), Ctrl+C, then a
    // command of its own.
    let mut seen = 0;
    while seen < 1_000_000 {
        if let Some(bytes) = output(&ws.next().await) {
            seen += bytes.len();
        }
    }
    ws.send(keys("\x03")).await;
    ws.send(keys("echo after-$((2+2))\r")).await;
    let mut tail = Vec::new();
    loop {
        if let Some(bytes) = output(&ws.next().await) {
            tail.extend_from_slice(&bytes);
            let keep = tail.len().saturating_sub(4096);
            tail.drain(..keep);
        }
        let text = String::from_utf8_lossy(&tail);
        assert!(
            !text.contains(END),
            "the flood ran to its end: Ctrl+C waited behind it"
        );
        if text.contains("after-4") {
            break;
        }
    }
}

/// A flood that ends (a reader keeps up with it or falls behind).
const SHORT_FLOOD: &str =
    "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 20000000; echo FLOOD-$((1+1))-DONE";

#[tokio::test]
async fn a_viewer_that_fell_behind_a_resize_is_told_the_size_before_its_snapshot() {
    let (server, _dir) = Server::fresh().await;
    let mut ws = server.joined("lag", "user=bob").await;
    let answer = ws
        .rpc(1, "term_open", json!([{"cols": 100, "rows": 30}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let term_id = answer["result"]["termId"].as_str().unwrap().to_string();
    let input = json!({"type":"duet_term_input","termId":term_id,"data":b64(format!("{SHORT_FLOOD}\r").as_bytes())});
    ws.send(input).await;
    // bob reads as fast as he can (a feed of the flood's size is more than
    // a socket is sent whole: he may fall behind and get a fresh snapshot);
    // his window shrinks as it runs.
    let mut tail = Vec::new();
    let (mut size, mut resized) = ((100, 30), false);
    loop {
        let frame = ws.next().await;
        if frame["type"] != "duet_term" {
            continue;
        }
        if frame["phase"] == "resize" {
            size = (
                frame["cols"].as_u64().unwrap(),
                frame["rows"].as_u64().unwrap(),
            );
        }
        if let Some(bytes) = output(&frame) {
            if !resized {
                resized = true;
                let resize =
                    json!({"type":"duet_term_resize","termId":term_id,"cols":50,"rows":10});
                ws.send(resize).await;
            }
            tail.extend_from_slice(&bytes);
            let keep = tail.len().saturating_sub(4096);
            tail.drain(..keep);
            if String::from_utf8_lossy(&tail).contains(END) {
                break;
            }
        }
    }
    // Whether or not he fell behind, the size he heard of last is the
    // terminal's: a snapshot after a resize he missed says it first.
    assert_eq!(
        size,
        (50, 10),
        "bob's screen kept a size the terminal no longer has"
    );
}

/// A socket that falls behind keeps its window's size in the "smallest"
/// rule: attaching again for a fresh snapshot is not leaving, so the
/// terminal does not grow to the other window meanwhile.
///
/// ann reads on a thread of her own: on one thread, bob's reading of the
/// whole flood could keep her from reading for longer than the server waits
/// on a send, and her socket would be dropped rather than fall behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_that_fell_behind_still_sizes_the_terminal() {
    let (server, _dir) = Server::fresh().await;
    let mut bob = server.joined("lag-size", "user=bob").await;
    let answer = bob
        .rpc(1, "term_open", json!([{"cols": 100, "rows": 30}]))
        .await;
    let term_id = answer["result"]["termId"].as_str().unwrap().to_string();
    let mut ann = server.joined("lag-size", "user=ann").await;
    let answer = ann
        .rpc(1, "term_open", json!([{"cols": 60, "rows": 20}]))
        .await;
    assert_eq!(answer["result"]["cols"], 60, "{answer}");
    // ann reads twenty frames a second while a longer flood runs (she falls behind,
    // never so slowly that her socket is given up); bob reads it all, and
    // hears of every resize.
    let flood =
        "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 60000000; echo FLOOD-$((1+1))-DONE";
    let input = json!({"type":"duet_term_input","termId":term_id,"data":b64(format!("{flood}\r").as_bytes())});
    bob.send(input).await;
    let ann_reads = tokio::spawn(async move {
        let (mut said, mut tail) = (None, Vec::new());
        loop {
            let frame = ann.next().await;
            if frame["type"] == "duet_term" && frame["phase"] == "resize" {
                said = Some((frame["cols"].clone(), frame["rows"].clone()));
            }
            if let Some(bytes) = output(&frame) {
                tail.extend_from_slice(&bytes);
                let keep = tail.len().saturating_sub(4096);
                tail.drain(..keep);
                if String::from_utf8_lossy(&tail).contains(END) {
                    // Her socket stays open (attached) with the answer.
                    return (said, ann);
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    let (mut sizes, mut tail) = (Vec::new(), Vec::new());
    loop {
        let frame = bob.next().await;
        if frame["type"] == "duet_term" && frame["phase"] == "resize" {
            sizes.push((frame["cols"].clone(), frame["rows"].clone()));
        }
        if let Some(bytes) = output(&frame) {
            tail.extend_from_slice(&bytes);
            let keep = tail.len().saturating_sub(4096);
            tail.drain(..keep);
            if String::from_utf8_lossy(&tail).contains(END) {
                break;
            }
        }
    }
    // If ann fell behind, she attached again (a resize frame of the size
    // now, then a snapshot); she sees the end of the flood.
    let (said, _ann) = ann_reads.await.unwrap();
    // The terminal is still ann's 60×20: bob opening again is answered so.
    let answer = bob.rpc(2, "term_open", json!([])).await;
    assert_eq!(
        (
            answer["result"]["cols"].clone(),
            answer["result"]["rows"].clone()
        ),
        (json!(60), json!(20)),
        "{answer}; resizes bob saw: {sizes:?}"
    );
    // Had she fallen behind, the size she was told is that one too.
    if let Some(said) = said {
        assert_eq!(said, (json!(60), json!(20)));
    }
}
