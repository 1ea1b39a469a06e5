//! Hostile input: random and mutated input for every parser, from the
//! outside where it can be (a real server on loopback) and in process for
//! the client's parsers. Nothing panics or hangs; every refusal is a clear
//! error of docs/protocol.md's shapes; the server keeps answering. The case
//! counts keep a run to seconds (CI runs it; `PROPTEST_CASES` raises them).

use crate::common::{Server, answer, http};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

/// A runtime and one server for every case of a test (the server must
/// survive them all). Each test has its own: the server dies with the
/// thread that started it.
struct Shared {
    rt: tokio::runtime::Runtime,
    server: Server,
    _dir: tempfile::TempDir,
}

fn shared() -> Shared {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // No model reachable: a message's turn ends at once with a system message.
    let server = rt.block_on(Server::start(
        dir.path(),
        &[
            "--exec-timeout-ms",
            "3000",
            "--ai-url",
            "http://127.0.0.1:9/v1",
            "--ai-model",
            "m",
        ],
    ));
    Shared {
        rt,
        server,
        _dir: dir,
    }
}

fn runner(cases: u32) -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(cases);
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::hash_map(
                prop_oneof![
                    Just("text".to_string()),
                    Just("userId".to_string()),
                    Just("cmd".to_string()),
                    Just("timeoutMs".to_string()),
                    Just("cwd".to_string()),
                    Just("env".to_string()),
                    Just("execId".to_string()),
                    Just("turnId".to_string()),
                    ".{0,8}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A body: arbitrary JSON, or arbitrary bytes.
fn any_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any_json().prop_map(|v| v.to_string().into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..200),
    ]
}

/// An error answer has docs/protocol.md's shape.
fn assert_error_shape(status: u16, body: &Value) -> Result<(), TestCaseError> {
    prop_assert!(
        [400, 404, 405, 409, 413, 429, 503, 507].contains(&status),
        "status {status}: {body}"
    );
    if status == 404 {
        return Ok(()); // a text body
    }
    prop_assert!(body["error"].is_string(), "{status} {body}");
    if status == 400 {
        prop_assert!(body["details"].is_object(), "{body}");
    }
    Ok(())
}

/// A command that cannot run for long nor write much (the sandbox's own
/// limits are tested elsewhere; here the parsers are under test).
fn harmless(body: &[u8]) -> bool {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return true;
    };
    map.get("cmd")
        .and_then(Value::as_str)
        .is_none_or(|c| c.len() < 3)
}

#[test]
fn http_bodies_never_break_the_server() {
    let s = &shared();
    let paths = [
        "message",
        "sandbox/exec",
        "sandbox/interrupt",
        "cancel",
        "cleanup",
    ];
    runner(48)
        .run(&(0..paths.len(), any_body()), |(i, body)| {
            if !harmless(&body) {
                return Ok(());
            }
            let url = s.server.url(&format!("/api/rooms/fuzz/{}", paths[i]));
            let (status, answer) = s.rt.block_on(answer(
                http()
                    .post(url)
                    .header("content-type", "application/json")
                    .body(body),
            ));
            if status != 200 && status != 207 {
                assert_error_shape(status, &answer)?;
            }
            Ok(())
        })
        .unwrap();
    let (status, _) = s.rt.block_on(answer(http().get(s.server.url("/health"))));
    assert_eq!(status, 200);
}

#[test]
fn room_ids_and_file_paths_are_checked() {
    let s = &shared();
    let segment = prop_oneof![
        "[A-Za-z0-9_-]{1,70}",
        ".{1,20}",
        Just("..".to_string()),
        Just("%2e%2e".to_string()),
        Just("%00".to_string()),
        Just("%2F".to_string()),
        Just("".to_string()),
    ];
    runner(64)
        .run(
            &(segment.clone(), proptest::collection::vec(segment, 1..4)),
            |(room, path)| {
                let encode = |p: &str| {
                    p.chars()
                        .map(|c| match c {
                            'A'..='Z' | 'a'..='z' | '0'..='9' | '_' | '-' | '.' | '%' => {
                                c.to_string()
                            }
                            c => url::form_urlencoded::byte_serialize(c.to_string().as_bytes())
                                .collect(),
                        })
                        .collect::<String>()
                };
                let url = s.server.url(&format!(
                    "/api/rooms/{}/files/{}",
                    encode(&room),
                    path.iter().map(|p| encode(p)).collect::<Vec<_>>().join("/")
                ));
                let (status, body) = s.rt.block_on(answer(http().get(url.clone())));
                if status != 200 {
                    assert_error_shape(status, &body)?;
                }
                let (status, body) = s.rt.block_on(answer(http().put(url).body("x")));
                if status != 200 {
                    assert_error_shape(status, &body)?;
                }
                Ok(())
            },
        )
        .unwrap();
    // Nothing outside the workspace was written.
    let (status, _) = s.rt.block_on(answer(http().get(s.server.url("/health"))));
    assert_eq!(status, 200);
}

#[test]
fn socket_frames_never_close_the_socket() {
    let s = &shared();
    let ws = std::cell::RefCell::new(s.rt.block_on(s.server.joined("frames", "user=fuzz")));
    let frame = prop_oneof![
        any_json().prop_map(|v| v.to_string()),
        any_json()
            .prop_map(|v| json!({"type":"rpc","id":"x","method":"exec","args":[v]}).to_string()),
        any_json().prop_map(|v| json!({"type":"rpc","id":7,"method":v,"args":v}).to_string()),
        ".{0,100}",
    ];
    runner(64)
        .run(&frame, |text| {
            if text.contains("\"cmd\"") {
                return Ok(()); // would run a command; exec is tested elsewhere
            }
            s.rt.block_on(ws.borrow_mut().send_text(&text));
            Ok(())
        })
        .unwrap();
    // The socket is still open and answers in order after all that.
    let answer =
        s.rt.block_on(ws.borrow_mut().rpc(987_654, "interrupt", json!([{}])));
    assert_eq!(answer["success"], true, "{answer}");
}

#[test]
fn client_parsers_take_anything() {
    runner(256)
        .run(&".{0,400}", |text| {
            let _ = duet::blocks::parse(&text, None);
            let _ = duet::blocks::extract_commands(&text);
            let _ = duet::config::FileConfig::parse(&text, std::path::Path::new("duet.toml"));
            let _ = duet::config::parse_as::<duet::tui::settings::UiSettings>(
                &text,
                std::path::Path::new("duet.toml"),
            );
            let _ = duet::text::termtext::clean(&text);
            let _ = duet::text::termtext::strip_sgr(&text);
            let mut out = duet::text::termtext::OutputBuffer::new();
            for chunk in text.as_bytes().chunks(7) {
                out.push(
                    duet::text::termtext::Stream::Stdout,
                    &String::from_utf8_lossy(chunk),
                );
            }
            out.finish();
            let _ = out.plain_lines();
            Ok(())
        })
        .unwrap();
    // Escape-heavy text, as a hostile command would print.
    runner(256)
        .run(
            &proptest::collection::vec(
                prop_oneof![
                    Just("\x1b[".to_string()),
                    Just("\x1b]52;c;".to_string()),
                    Just("\x07".to_string()),
                    Just("\r".to_string()),
                    Just("\x1b[2J".to_string()),
                    "[0-9;?]{0,6}[A-Za-z]?",
                    ".{0,5}",
                ],
                0..40,
            ),
            |parts| {
                let text = parts.concat();
                for line in duet::text::termtext::clean(&text) {
                    prop_assert!(!line.contains("\x1b]52"), "OSC 52 passed through: {line:?}");
                }
                Ok(())
            },
        )
        .unwrap();
}

#[tokio::test]
async fn undecodable_segments_are_a_400_naming_them() {
    let (server, _dir) = Server::fresh().await;
    let (status, body) = answer(http().get(server.url("/api/rooms/%Aa/files/x"))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["room"].is_array(), "{body}");
    let (status, body) = answer(http().get(server.url("/api/rooms/ok/files/a%FF"))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["path"].is_array(), "{body}");
    let (status, body) = server.post("/api/rooms/%C3%28/cleanup", json!({})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["room"].is_array(), "{body}");
}
