//! `screen` frames (docs/protocol.md "The shared terminal"): a socket that
//! opens the terminal with `screen: true` is sent the screen as lines of
//! spans (a full frame after the answer, then the lines that changed)
//! instead of the output's bytes: colours, the cursor, the alternate
//! screen, a resize, a viewer watching, hostile bytes as plain text, and a
//! flood it does not stay behind.

use super::*;
use crate::common::access::{guest, owner_joins, with_token};

/// A socket attached for `screen` frames, with the screen they drew.
struct Painted {
    ws: Ws,
    term_id: String,
    cols: u64,
    rows: u64,
    /// Each line's spans, by row.
    lines: Vec<Value>,
    cursor: Value,
    modes: Value,
    /// `full` frames seen (the first after the answer included).
    fulls: usize,
    /// Frames of changed lines seen.
    deltas: usize,
    /// The other frames read meanwhile.
    others: Vec<Value>,
}

impl Painted {
    /// Opens (or joins) the terminal from `ws` with `args` plus `screen: true`.
    async fn open(mut ws: Ws, mut args: Value) -> Painted {
        args["screen"] = json!(true);
        ws.send(json!({"type":"rpc","id":1,"method":"term_open","args":[args]}))
            .await;
        let mut others = Vec::new();
        let answer = loop {
            let f = ws.next().await;
            if f["type"] == "rpc" && f["id"] == 1 {
                break f;
            }
            others.push(f);
        };
        assert_eq!(answer["success"], true, "{answer}");
        let term_id = answer["result"]["termId"].as_str().unwrap().to_string();
        // Right after the answer: a full frame of the terminal's size.
        let full = ws.next().await;
        assert_eq!(
            (&full["type"], &full["phase"], &full["full"]),
            (&json!("duet_term"), &json!("screen"), &json!(true)),
            "{full}"
        );
        assert_eq!(full["termId"], term_id.as_str());
        assert_eq!(
            (&full["cols"], &full["rows"]),
            (&answer["result"]["cols"], &answer["result"]["rows"])
        );
        let mut painted = Painted {
            ws,
            term_id,
            cols: 0,
            rows: 0,
            lines: Vec::new(),
            cursor: Value::Null,
            modes: Value::Null,
            fulls: 0,
            deltas: 0,
            others,
        };
        painted.apply(full);
        painted
    }

    /// Applies a frame; a `data` frame fails the test.
    fn apply(&mut self, f: Value) {
        if f["type"] != "duet_term" || f["termId"] != self.term_id.as_str() {
            self.others.push(f);
            return;
        }
        assert_ne!(f["phase"], "data", "a screen socket was sent bytes: {f}");
        if f["phase"] != "screen" {
            self.others.push(f);
            return;
        }
        let (cols, rows) = (f["cols"].as_u64().unwrap(), f["rows"].as_u64().unwrap());
        let lines = f["lines"].as_array().unwrap();
        if f["full"] == true {
            self.fulls += 1;
            assert_eq!(lines.len() as u64, rows, "a full frame has every line");
            self.lines = vec![json!([]); rows as usize];
        } else {
            self.deltas += 1;
            assert_eq!(
                (cols, rows),
                (self.cols, self.rows),
                "a delta keeps the size"
            );
        }
        (self.cols, self.rows) = (cols, rows);
        for line in lines {
            let y = line["y"].as_u64().unwrap() as usize;
            self.lines[y] = line["spans"].clone();
        }
        self.cursor = f["cursor"].clone();
        self.modes = f["modes"].clone();
    }

    /// Row `y`'s text.
    fn line(&self, y: usize) -> String {
        let spans = self.lines[y].as_array().unwrap();
        spans.iter().map(|s| s["t"].as_str().unwrap()).collect()
    }

    fn text(&self) -> String {
        (0..self.lines.len())
            .map(|y| self.line(y))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Reads frames until `ok` holds of the screen.
    async fn until(&mut self, what: &str, ok: impl Fn(&Painted) -> bool) {
        let found = tokio::time::timeout(SCREEN_WAIT, async {
            while !ok(self) {
                let f = self.ws.next().await;
                self.apply(f);
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "{what} never showed ({} full frames, {} deltas, others {:?}); the screen:\n{}",
            self.fulls,
            self.deltas,
            self.others
                .iter()
                .map(|f| format!("{} {}", f["type"], f["phase"]))
                .collect::<Vec<_>>(),
            self.text()
        );
    }

    async fn until_text(&mut self, what: &str) {
        self.until(what, |p| p.text().contains(what)).await;
    }

    /// Reads frames until the shell waits at a prompt on the cursor's row.
    async fn until_prompt(&mut self) {
        self.until("a prompt", |p| {
            let (x, y) = (p.cursor["x"].as_u64(), p.cursor["y"].as_u64());
            let (Some(x), Some(y)) = (x, y) else {
                return false;
            };
            let line: String = p
                .line(y as usize)
                .chars()
                .chain(std::iter::repeat(' '))
                .take(x as usize)
                .collect();
            line.ends_with("$ ")
        })
        .await;
    }

    /// Attaches again (after a `term_detach`): the answer, then a full frame.
    async fn reopen(&mut self) {
        self.ws
            .send(json!({"type":"rpc","id":2,"method":"term_open","args":[{"screen":true}]}))
            .await;
        let answer = self.ws.until(|f| f["type"] == "rpc" && f["id"] == 2).await;
        assert_eq!(answer["success"], true, "{answer}");
        let full = self.ws.next().await;
        assert_eq!(full["full"], true, "{full}");
        self.apply(full);
    }

    async fn type_in(&mut self, keys: &str) {
        let frame =
            json!({"type":"duet_term_input","termId":self.term_id,"data":b64(keys.as_bytes())});
        self.ws.send(frame).await;
    }
}

#[tokio::test]
async fn a_screen_socket_is_sent_lines_of_spans_colours_cursor_and_modes() {
    let (server, _dir) = Server::fresh().await;
    let ws = server.joined("screen-spans", "user=ada").await;
    let mut ada = Painted::open(ws, json!({"cols": 80, "rows": 24})).await;
    assert_eq!((ada.cols, ada.rows), (80, 24));
    assert_eq!(
        ada.modes,
        json!({"altScreen": false, "appCursor": false, "bracketedPaste": ada.modes["bracketedPaste"]})
    );
    ada.until_prompt().await;
    // Red text: a span of palette colour 1.
    ada.type_in("printf '\\e[31mred\\e[0m and plain\\n'\r")
        .await;
    ada.until("a red span", |p| {
        p.lines.iter().any(|l| {
            l.as_array()
                .unwrap()
                .iter()
                .any(|s| s["t"] == "red" && s["fg"] == 1)
        })
    })
    .await;
    let row = ada
        .lines
        .iter()
        .find(|l| l[0]["t"] == "red")
        .cloned()
        .unwrap();
    assert_eq!(row, json!([{"t":"red","fg":1},{"t":" and plain"}]));
    ada.until_prompt().await;
    // The alternate screen, a hidden cursor at a place, left again after.
    ada.type_in("tput civis; printf '\\e[?1049h\\e[H\\e[2J\\e[6;11Hon-%s' $((6*7)); read; printf '\\e[?1049l'; tput cnorm\r").await;
    ada.until("the alternate screen", |p| {
        p.modes["altScreen"] == true && p.line(5).ends_with("on-42")
    })
    .await;
    assert_eq!(ada.line(5), format!("{}on-42", " ".repeat(10)));
    assert_eq!(ada.cursor, json!({"x": 15, "y": 5, "visible": false}));
    assert!(
        !ada.text().contains("red and plain"),
        "the main screen is not shown"
    );
    ada.type_in("\r").await;
    ada.until("the main screen again", |p| {
        p.modes["altScreen"] == false && p.cursor["visible"] == true
    })
    .await;
    ada.until_text("red and plain").await;
    assert!(!ada.text().contains("on-42"));
    // A screen socket's input is typed as usual; it never got a data frame.
    ada.until_prompt().await;
    ada.type_in("echo typed-$((6*7))\r").await;
    ada.until_text("\ntyped-42").await;
}

#[tokio::test]
async fn hostile_bytes_come_out_as_plain_span_text() {
    let (server, _dir) = Server::fresh().await;
    let ws = server.joined("screen-hostile", "user=ada").await;
    let mut ada = Painted::open(ws, json!({"cols": 100, "rows": 24})).await;
    ada.until_prompt().await;
    // The echo of the command shows escapes; only the output has the bytes.
    ada.type_in(concat!(
        "printf '\\x3cscript\\x3ealert(1)\\x3c/script\\x3e\\e]0;\\x3cb\\x3etitle\\a",
        "\\e]8;;java\\x73cript:x\\e\\\\\\xff\\xfe\\x01-end\\n'\r"
    ))
    .await;
    ada.until_text("<script>alert(1)</script>").await;
    ada.until_text("-end").await;
    let text = ada.text();
    let line = text
        .lines()
        .find(|l| l.starts_with("<script>"))
        .unwrap()
        .to_string();
    assert!(line.starts_with("<script>alert(1)</script>"), "{line:?}");
    assert!(line.ends_with("-end"), "{line:?}");
    assert!(
        !text.contains("<b>") && !text.contains("javascript"),
        "{text}"
    );
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
}

#[tokio::test]
async fn a_resize_gives_a_full_frame_at_the_new_size() {
    let (server, _dir) = Server::fresh().await;
    let ws = server.joined("screen-resize", "user=ada").await;
    let mut ada = Painted::open(ws, json!({"cols": 80, "rows": 24})).await;
    ada.until_prompt().await;
    let fulls = ada.fulls;
    ada.ws
        .send(json!({"type":"duet_term_resize","termId":ada.term_id,"cols":60,"rows":12}))
        .await;
    let resize = ada.ws.until(term_frame("resize", &ada.term_id)).await;
    assert_eq!((&resize["cols"], &resize["rows"]), (&json!(60), &json!(12)));
    // The next screen frame (the room's state may come between) is full.
    let full = ada
        .ws
        .until(|f| f["type"] == "duet_term" && f["phase"] != "resize")
        .await;
    assert_eq!(
        (&full["phase"], &full["full"]),
        (&json!("screen"), &json!(true)),
        "{full}"
    );
    assert_eq!((&full["cols"], &full["rows"]), (&json!(60), &json!(12)));
    ada.apply(full);
    assert_eq!(ada.fulls, fulls + 1);
    assert_eq!(ada.lines.len(), 12);
    // The program draws for the new size.
    ada.until_prompt().await;
    ada.type_in("echo cols=$(tput cols)\r").await;
    ada.until_text("\ncols=60").await;
}

#[tokio::test]
async fn a_viewer_watches_the_screen_and_its_keys_are_refused() {
    let (server, _dir) = with_token(&[]).await;
    let room = "screen-viewer";
    let mut owner = owner_joins(&server, room, "user=olga").await.ws;
    let answer = owner
        .rpc(1, "term_open", json!([{"cols": 90, "rows": 20}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let (vera, _) = guest(&server, room, "viewer", None).await;
    let viewer = vera.joins("user=vera").await;
    // A viewer's size never counts; it is sent the screen at the terminal's.
    let mut vera = Painted::open(viewer.ws, json!({"cols": 40, "rows": 10})).await;
    assert_eq!((vera.cols, vera.rows), (90, 20));
    let term_id = vera.term_id.clone();
    let keys =
        |k: &str| json!({"type":"duet_term_input","termId":term_id,"data":b64(k.as_bytes())});
    owner.send(keys("echo owner-$((20+3))\r")).await;
    vera.until_text("\nowner-23").await;
    vera.type_in("echo VIEWER-TYPED\r").await;
    let refused = vera.ws.until(|f| f["type"] == "duet_error").await;
    assert_eq!(refused, json!({"type":"duet_error","error":"forbidden"}));
    owner.send(keys("echo still-$((1+1))\r")).await;
    vera.until_text("\nstill-2").await;
    assert!(!vera.text().contains("VIEWER-TYPED"));
}

#[tokio::test]
async fn a_flood_of_output_does_not_leave_a_screen_socket_behind() {
    let (server, _dir) = Server::fresh().await;
    let room = "screen-flood";
    let mut ann = Painted::open(
        server.joined(room, "user=ann").await,
        json!({"cols": 300, "rows": 100}),
    )
    .await;
    ann.until_prompt().await;
    // A reader that takes its time: on duet serve its socket holds 4 KiB.
    let url = format!("ws://{}/api/rooms/{room}/ws?user=sam", server.addr);
    let mut ws = if common::backend() == common::Backend::Serve {
        Ws::connect_small(&url, &server.addr).await
    } else {
        server.ws(room, "user=sam").await
    };
    for _ in 0..4 {
        ws.next().await;
    }
    let mut sam = Painted::open(ws, json!({})).await;
    // Every line differs from the one before: each frame changes them all.
    ann.type_in("base64 -w 290 /dev/urandom; echo FLOOD-$((1+1))-DONE\r")
        .await;
    // ann stops watching (she would not read either), and comes back to
    // stop it.
    let detached = ann
        .ws
        .rpc(3, "term_detach", json!([{"termId": ann.term_id}]))
        .await;
    assert_eq!(detached["success"], true, "{detached}");
    // sam reads slower than the flood comes: a burst of frames each
    // second (never so slowly that one send to him waits 5 s: such a
    // socket is dropped), then as fast as he can. Whether he fell behind
    // (duet serve: once the frames waiting for him outgrow what the kernel
    // holds, he is sent a full frame instead) or not (the worker: a slow
    // reader is the platform's to buffer), his screen ends right and
    // follows on.
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        for _ in 0..10 {
            let f = sam.ws.next().await;
            sam.apply(f);
        }
    }
    ann.reopen().await;
    ann.type_in("\x03").await;
    ann.type_in("clear; echo after-$((2+2))\r").await;
    sam.until_text("after-4").await;
    sam.until("the screen after the flood", |p| p.line(0) == "after-4")
        .await;
    assert!(!sam.text().contains("FLOOD-2-DONE"));
    eprintln!(
        "the slow reader: {} full frames, {} deltas",
        sam.fulls, sam.deltas
    );
}
