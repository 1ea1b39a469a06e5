//! Sizes and bytes a terminal survives: tiny and huge sizes clamped, and
//! fuzzed sizes and input.

use super::*;

/// Issue 23: bob's hidden pane asked for 1×1 while a 300-character line
/// was on the screen; the server's emulator panicked and the terminal
/// ended for everyone. A size is clamped to 20×5 (and 500×200), and the
/// terminal lives on.
#[tokio::test]
async fn a_tiny_or_huge_size_is_clamped_and_the_terminal_lives_on() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-tiny", "ada", Some((90, 28))).await;
    ada.until_prompt().await;
    let mut bob = Viewer::attach(&server, "term-tiny", "bob", Some((90, 28))).await;
    ada.type_in("printf 'x%.0s' $(seq 300); echo\r").await;
    ada.until_screen(&"x".repeat(200)).await;
    let term_id = ada.term_id.clone();
    bob.ws
        .send(json!({"type":"duet_term_resize","termId":term_id,"cols":1,"rows":1}))
        .await;
    let resize = ada.until_frame(term_frame("resize", &term_id)).await;
    assert_eq!(
        (resize["cols"].clone(), resize["rows"].clone()),
        (json!(20), json!(5))
    );
    ada.type_in("echo alive-$((40+2))\r").await;
    ada.until_screen("alive-42").await;
    bob.until_screen("alive-42").await;
    // Huge: the largest terminal once bob leaves; 0×0: the smallest.
    ada.ws
        .send(json!({"type":"duet_term_resize","termId":term_id,"cols":65535,"rows":65535}))
        .await;
    bob.ws.close().await;
    // Two sockets' frames arrive in either order: bob's leaving may first
    // give the terminal ada's old 90x28, then her huge size, clamped.
    let is_resize = term_frame("resize", &term_id);
    let resize = ada.until_frame(|f| is_resize(f) && f["cols"] != 90).await;
    assert_eq!(
        (resize["cols"].clone(), resize["rows"].clone()),
        (json!(500), json!(200))
    );
    ada.others.retain(|f| !is_resize(f));
    ada.ws
        .send(json!({"type":"duet_term_resize","termId":term_id,"cols":0,"rows":0}))
        .await;
    let resize = ada.until_frame(term_frame("resize", &term_id)).await;
    assert_eq!(
        (resize["cols"].clone(), resize["rows"].clone()),
        (json!(20), json!(5))
    );
    let open = ada
        .ws
        .rpc(7, "term_open", json!([{"cols": 65535, "rows": -3}]))
        .await;
    assert_eq!(
        open["result"],
        json!({"termId": term_id, "cols": 500, "rows": 5}),
        "{open}"
    );
    assert!(
        !ada.others.iter().any(|f| f["phase"] == "exit"),
        "the terminal never ended: {:?}",
        ada.others
    );
}

/// Keys that bring readline back to an empty line from wherever random
/// input left it: the end of a bracketed paste, XON, a quoted insert's
/// victim, abort, Ctrl+C.
const RECOVER: &str = "\x1b[201~\x11\x16\x07\x07\x03\x03";

/// One random resize for the fuzz: the edges (0, 1, 65535, negative)
/// often, anything in between otherwise.
fn fuzz_size(rng: &mut StdRng) -> i64 {
    match rng.random_range(0..6) {
        0 => 0,
        1 => 1,
        2 => 65535,
        3 => -1,
        _ => rng.random_range(2..700),
    }
}

/// Random input bytes for the fuzz: any byte but the control keys (and
/// lone escapes), which drive bash's line editor into states of its own
/// (a search, a paste, an editor, the line run): those would test bash,
/// not the terminal; editing keys and invalid UTF-8 included. The raw
/// random bytes go the other way, as output (`head -c … /dev/urandom`).
fn fuzz_input(rng: &mut StdRng) -> Vec<u8> {
    const PIECES: [&[u8]; 6] = [
        b"\x1b[A",
        b"\x1b[D",
        "你好".as_bytes(),
        b"\x7f",
        b"\t",
        b"\xff\xfe",
    ];
    let mut bytes = Vec::new();
    for _ in 0..rng.random_range(1..24) {
        if rng.random_bool(0.3) {
            bytes.extend_from_slice(PIECES[rng.random_range(0..PIECES.len())]);
        } else {
            bytes.push(rng.random_range(0x20..=0xff));
        }
    }
    bytes
}

/// The fuzz over the protocol (issue 23): two attached sockets send
/// random sizes (0×0, 1×1, 65535×65535 and negative included), random
/// input bytes, and every 25th round have the shell print 4000 random
/// bytes (raw output for the emulator); afterwards the terminal still
/// runs, both see its output, and it was never ended. Seeded: a failure
/// repeats.
#[tokio::test]
async fn fuzzed_sizes_and_bytes_leave_the_terminal_alive() {
    const ROUNDS: usize = 300;
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-fuzz", "ada", Some((80, 24))).await;
    ada.until_prompt().await;
    let mut bob = Viewer::attach(&server, "term-fuzz", "bob", Some((100, 30))).await;
    let term_id = ada.term_id.clone();
    let mut rng = StdRng::seed_from_u64(23);
    for round in 0..ROUNDS {
        let ws = if rng.random_bool(0.5) {
            &mut ada.ws
        } else {
            &mut bob.ws
        };
        let frame = match rng.random_range(0..10) {
            // Raw random output (every 25th round), then a reset so the
            // screen is readable again.
            _ if round % 25 == 24 => {
                let cmd = format!("{RECOVER}head -c 4000 /dev/urandom; printf '\\033c'\r");
                json!({"type":"duet_term_input","termId":term_id,"data":b64(cmd.as_bytes())})
            }
            0..4 => {
                let (cols, rows) = (fuzz_size(&mut rng), fuzz_size(&mut rng));
                json!({"type":"duet_term_resize","termId":term_id,"cols":cols,"rows":rows})
            }
            _ => {
                json!({"type":"duet_term_input","termId":term_id,"data":b64(&fuzz_input(&mut rng))})
            }
        };
        ws.send(frame).await;
    }
    // Back to a usable size and a clean line; then the marker.
    for viewer in [&mut ada, &mut bob] {
        viewer
            .ws
            .send(json!({"type":"duet_term_resize","termId":term_id,"cols":80,"rows":24}))
            .await;
    }
    // The input may have left readline anywhere (a bracketed paste begun,
    // a search, a quoted insert): end a paste, abort, clear the line.
    let mut alive = false;
    for _ in 0..5 {
        ada.type_in(RECOVER).await;
        ada.type_in("printf '\\033c'; stty sane; echo fuzz-$((6*7))-done\r")
            .await;
        if ada
            .shows_within("fuzz-42-done", Duration::from_secs(10))
            .await
        {
            alive = true;
            break;
        }
    }
    let said: Vec<&Value> = ada
        .others
        .iter()
        .filter(|f| f["type"] != "duet_typing")
        .collect();
    assert!(
        alive,
        "the terminal no longer runs commands:\n{}\nother frames: {said:?}",
        ada.text()
    );
    bob.until_screen("fuzz-42-done").await;
    for viewer in [&ada, &bob] {
        assert!(
            !viewer.others.iter().any(|f| f["phase"] == "exit"),
            "the terminal never ended: {:?}",
            viewer
                .others
                .iter()
                .filter(|f| f["type"] == "duet_term")
                .collect::<Vec<_>>()
        );
    }
    // The room still has it, and a new socket joins the same one.
    let carl = Viewer::attach(&server, "term-fuzz", "carl", Some((80, 24))).await;
    assert_eq!(carl.term_id, term_id);
}
