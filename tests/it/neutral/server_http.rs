//! `duet serve` over HTTP: every endpoint of docs/protocol.md (Files aside) with
//! its error answers, against the real binary on a loopback port.

use crate::common;
use crate::common::{Server, answer, http};
use serde_json::{Value, json};

/// The `details` fields of a 400 answer.
fn fields(body: &Value) -> Vec<String> {
    assert_eq!(body["error"], "invalid request", "{body}");
    body["details"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[tokio::test]
async fn health_answers_ok_in_text() {
    let (server, _dir) = Server::fresh().await;
    let res = http().get(server.url("/health")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "ok");
}

#[tokio::test]
async fn a_token_is_needed_everywhere_but_health() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--token", "s3cret"]).await;
    let unauthorized = json!({"error":"unauthorized"});
    for token in [None, Some("wrong")] {
        for (method, path) in [
            ("POST", "/api/rooms/r1/message"),
            ("POST", "/api/rooms/r1/sandbox/exec"),
            ("POST", "/api/rooms/r1/cleanup"),
            ("GET", "/api/rooms/r1/messages"),
            ("GET", "/api/rooms/r1/ws"),
            ("GET", "/nowhere"),
        ] {
            let mut req = http()
                .request(method.parse().unwrap(), server.url(path))
                .json(&json!({"text":"x"}));
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            assert_eq!(
                answer(req).await,
                (401, unauthorized.clone()),
                "{method} {path}"
            );
        }
    }
    let res = http().get(server.url("/health")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    // With the token (Server::get adds it) the request goes through.
    assert_eq!(server.get("/api/rooms/r1/messages").await.0, 200);
    // A socket may pass it as ?token=, and only the right one.
    let url = format!("ws://{}/api/rooms/r1/ws?user=ada", server.addr);
    let refused = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("401"), "{refused}");
    let refused = tokio_tungstenite::connect_async(format!("{url}&token=nope"))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("401"), "{refused}");
    let mut ws = common::Ws::connect(&format!("{url}&token=s3cret")).await;
    assert_eq!(ws.next().await["type"], "cf_agent_identity");
    // The query token does not open HTTP endpoints.
    let req = http().get(server.url("/api/rooms/r1/messages?token=s3cret"));
    assert_eq!(answer(req).await.0, 401);
}

#[tokio::test]
async fn bad_requests_name_every_bad_field() {
    let (server, _dir) = Server::fresh().await;
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "/api/rooms/bad!room/message",
            json!({"text":"hi"}),
            vec!["room"],
        ),
        ("/api/rooms/-r/sandbox/exec", json!({}), vec!["cmd", "room"]),
        ("/api/rooms/r1/message", json!({}), vec!["text"]),
        (
            "/api/rooms/r1/message",
            json!({"text":"  \n "}),
            vec!["text"],
        ),
        (
            "/api/rooms/r1/message",
            json!({"text":"x".repeat(8001)}),
            vec!["text"],
        ),
        (
            "/api/rooms/r1/message",
            json!({"text":"hi","userId":"x".repeat(33)}),
            vec!["userId"],
        ),
        (
            "/api/rooms/r1/message",
            json!({"text":5,"userId":""}),
            vec!["text", "userId"],
        ),
        ("/api/rooms/r1/sandbox/exec", json!({"cmd":""}), vec!["cmd"]),
        (
            "/api/rooms/r1/sandbox/exec",
            json!({"cmd":"a\u{0}b"}),
            vec!["cmd"],
        ),
        (
            "/api/rooms/r1/sandbox/exec",
            json!({"cmd":"ls","timeoutMs":"soon","cwd":7,"env":{"1A":"x"}}),
            vec!["cwd", "env", "timeoutMs"],
        ),
        (
            "/api/rooms/r1/sandbox/exec",
            json!({"cmd":"ls","env":["A"]}),
            vec!["env"],
        ),
        (
            "/api/rooms/r1/sandbox/interrupt",
            json!({"execId":5}),
            vec!["execId"],
        ),
        ("/api/rooms/r1/cancel", json!({"turnId":[]}), vec!["turnId"]),
        (
            "/api/rooms/r1/cleanup",
            json!({"userId":"a\u{7}"}),
            vec!["userId"],
        ),
    ];
    for (path, body, expected) in cases {
        let (status, answer) = server.post(path, body.clone()).await;
        assert_eq!(status, 400, "{path} {body}");
        assert_eq!(fields(&answer), expected, "{path} {body}");
    }
    // A body that is not JSON, or not an object.
    for raw in ["{not json", "[1,2]", "\"text\""] {
        let req = http().post(server.url("/api/rooms/r1/message")).body(raw);
        let (status, body) = answer(req).await;
        assert_eq!(
            (status, fields(&body)),
            (400, vec!["body".to_string()]),
            "{raw}"
        );
    }
    // Arrays and objects nested 128 deep are refused as JSON alike; 127 are read.
    let nested = |depth: usize| {
        let inner = depth - 1;
        format!(
            r#"{{"text":"deep","to":"room","x":{}{}}}"#,
            "[".repeat(inner),
            "]".repeat(inner)
        )
    };
    let post = |raw: String| {
        http()
            .post(server.url("/api/rooms/deep/message"))
            .header("content-type", "application/json")
            .body(raw)
    };
    let (status, body) = answer(post(nested(128))).await;
    assert_eq!((status, fields(&body)), (400, vec!["body".to_string()]));
    let (status, body) = answer(post(nested(127))).await;
    assert_eq!(status, 200, "{body}");
    // A number beyond a double's range is not JSON either; a whole number
    // written as a float (a fraction or an exponent) is not a whole number.
    let (status, body) = answer(post(r#"{"text":"far","to":"room","x":1e400}"#.into())).await;
    assert_eq!((status, fields(&body)), (400, vec!["body".to_string()]));
    for (path, raw, field) in [
        (
            "sandbox/exec",
            r#"{"cmd":"true","timeoutMs":1e3}"#,
            "timeoutMs",
        ),
        (
            "sandbox/exec",
            r#"{"cmd":"true","timeoutMs":1000.0}"#,
            "timeoutMs",
        ),
        (
            "invites",
            r#"{"role":"viewer","expiresIn":1E2}"#,
            "expiresIn",
        ),
    ] {
        let request = http()
            .post(server.url(&format!("/api/rooms/deep/{path}")))
            .header("content-type", "application/json")
            .body(raw);
        let (status, body) = answer(request).await;
        // A backend without a token has no invites (409): the field comes first.
        assert_eq!(
            (status, fields(&body)),
            (400, vec![field.to_string()]),
            "{raw}"
        );
    }
    // Paging parameters.
    for (query, field) in [
        ("limit=101", "limit"),
        ("limit=ten", "limit"),
        ("before=abc", "before"),
    ] {
        let (status, body) = server.get(&format!("/api/rooms/r1/messages?{query}")).await;
        assert_eq!(
            (status, fields(&body)),
            (400, vec![field.to_string()]),
            "{query}"
        );
    }
    let (status, body) = server.get("/api/rooms/a.b/messages").await;
    assert_eq!((status, fields(&body)), (400, vec!["room".to_string()]));
    // A bad room id touches nothing: the room does not appear anywhere.
    let (status, body) = server.get("/api/rooms/r1/messages").await;
    assert_eq!(
        (status, body),
        (200, json!({"messages":[],"hasMore":false}))
    );
}

#[tokio::test]
async fn unknown_paths_are_404_text_and_wrong_methods_405_json() {
    let (server, _dir) = Server::fresh().await;
    // (`/` is the page: neutral::web_access.)
    for path in [
        "/api/rooms/r1",
        "/api/rooms/r1/nothing",
        "/api/rooms/a/b/message",
    ] {
        let res = http().get(server.url(path)).send().await.unwrap();
        assert_eq!(res.status(), 404, "{path}");
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/plain")
        );
    }
    for (method, path) in [
        ("GET", "/api/rooms/r1/message"),
        ("PUT", "/api/rooms/r1/sandbox/exec"),
        ("DELETE", "/api/rooms/r1/cleanup"),
        ("POST", "/api/rooms/r1/messages"),
        ("POST", "/health"),
    ] {
        let req = http().request(method.parse().unwrap(), server.url(path));
        assert_eq!(
            answer(req).await,
            (405, json!({"error":"method not allowed"})),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn bodies_over_one_mebibyte_are_413() {
    let (server, _dir) = Server::fresh().await;
    let big = format!("{{\"text\":\"{}\"}}", "a".repeat(1024 * 1024 + 1));
    let req = http()
        .post(server.url("/api/rooms/r1/message"))
        .body(big.clone());
    assert_eq!(answer(req).await, (413, json!({"error":"body too large"})));
    // Also when streamed without a length.
    let stream = futures_util::stream::iter(
        big.into_bytes()
            .chunks(64 * 1024)
            .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
            .collect::<Vec<_>>(),
    );
    let req = http()
        .post(server.url("/api/rooms/r1/sandbox/exec"))
        .body(reqwest::Body::wrap_stream(stream));
    assert_eq!(answer(req).await, (413, json!({"error":"body too large"})));
    // Nothing was stored.
    assert_eq!(
        server.get("/api/rooms/r1/messages").await.1["messages"],
        json!([])
    );
}

#[tokio::test]
async fn a_message_without_a_model_stores_a_system_message_saying_so() {
    let (server, _dir) = Server::fresh().await;
    let (status, body) = server
        .post(
            "/api/rooms/r1/message",
            json!({"text":"hello there","userId":"ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], Value::Null);
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("No model is configured"), "{error}");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["text"], "hello there");
    assert_eq!(messages[0]["userId"], "ada");
    assert_eq!(messages[0]["id"], "000000000001");
    assert_eq!(messages[1]["role"], "system");
    assert_eq!(messages[1]["text"], error);
    assert_eq!(messages[1]["userId"], "ada");
    assert_eq!(messages[1]["id"], "000000000002");
    // Stored: the page shows the same messages.
    let (_, page) = server.get("/api/rooms/r1/messages").await;
    assert_eq!(page["messages"], body["messages"]);
    // Other rooms are untouched.
    assert_eq!(
        server.get("/api/rooms/r2/messages").await.1["messages"],
        json!([])
    );
}

#[tokio::test]
async fn messages_page_backwards_oldest_first() {
    let (server, _dir) = Server::fresh().await;
    for n in 1..=3 {
        server
            .post("/api/rooms/p1/message", json!({"text":format!("m{n}")}))
            .await;
    }
    // Six messages: three user, three system.
    let (_, all) = server.get("/api/rooms/p1/messages").await;
    let ids: Vec<&str> = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 6);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(all["hasMore"], false);
    let (_, newest) = server.get("/api/rooms/p1/messages?limit=4").await;
    assert_eq!(newest["messages"].as_array().unwrap().len(), 4);
    assert_eq!(newest["messages"][0]["id"], ids[2]);
    assert_eq!(newest["hasMore"], true);
    let (_, older) = server
        .get(&format!("/api/rooms/p1/messages?before={}&limit=4", ids[2]))
        .await;
    assert_eq!(
        older["messages"],
        json!([all["messages"][0], all["messages"][1]])
    );
    assert_eq!(older["hasMore"], false);
}

#[tokio::test]
async fn cancel_interrupt_and_cleanup_answer_when_idle() {
    let (server, _dir) = Server::fresh().await;
    assert_eq!(
        server.post("/api/rooms/c1/cancel", json!({})).await,
        (200, json!({"cancelled":false}))
    );
    let (status, body) = server
        .post(
            "/api/rooms/c1/cancel",
            json!({"turnId":"t1","userId":"ada"}),
        )
        .await;
    assert_eq!((status, body), (200, json!({"cancelled":false})));
    assert_eq!(
        server
            .post("/api/rooms/c1/sandbox/interrupt", json!({}))
            .await,
        (200, json!({"interrupted":false}))
    );
    server
        .post("/api/rooms/c1/message", json!({"text":"before"}))
        .await;
    // An empty body counts as {}.
    let req = http().post(server.url("/api/rooms/c1/cleanup"));
    assert_eq!(
        answer(req).await,
        (200, json!({"cleaned":true,"roomId":"c1"}))
    );
    // The emptied room holds one record of who cleaned it up.
    let left = server.get("/api/rooms/c1/messages").await.1["messages"].clone();
    assert_eq!(left.as_array().unwrap().len(), 1, "{left}");
    let record = &left[0];
    assert_eq!(record["event"], json!({"kind":"cleanup","by":"anonymous"}));
    assert_eq!(record["text"], "anonymous cleaned up the room");
    // Ids are never reused, not even after cleanup.
    let (_, body) = server
        .post("/api/rooms/c1/message", json!({"text":"after"}))
        .await;
    let (record_id, after_id) = (
        record["id"].as_str().unwrap(),
        body["messages"][1]["id"].as_str().unwrap(),
    );
    assert!(record_id > "000000000002" && after_id > record_id, "{body}");
}

#[tokio::test]
async fn listening_beyond_loopback_needs_a_token() {
    if common::only_duet_serve("its own refusal to listen beyond loopback") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["serve", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("DUET_TOKEN")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--token TOKEN") && err.contains("DUET_TOKEN"),
        "{err}"
    );
}
