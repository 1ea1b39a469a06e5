//! Room operations on the wire, and the rpc calls' bookkeeping: retries,
//! resending, the outbox, renames.

use super::*;
use serde_json::json;

#[test]
fn operations_have_the_wire_shape() {
    assert_eq!(
        RoomOp::to_agent("hi").args(),
        vec![json!({"text":"hi","to":"agent"})]
    );
    assert_eq!(
        RoomOp::to_room("ok thanks").args(),
        vec![json!({"text":"ok thanks","to":"room"})]
    );
    assert_eq!(RoomOp::to_room("x").method().name(), "message");
    assert_eq!(
        RoomOp::Rename("bob".into()).args(),
        vec![json!({"name":"bob"})]
    );
    assert_eq!(RoomOp::Rename("bob".into()).method().name(), "rename");
    assert_eq!(RoomOp::Interrupt(None).args(), vec![json!({})]);
    assert_eq!(
        RoomOp::Cancel(Some("t1".into())).args(),
        vec![json!({"turnId":"t1"})]
    );
    assert!(RoomOp::Cleanup.args().is_empty());
    assert_eq!(RoomOp::Exec("ls".into()).method().name(), "exec");
}

#[test]
fn terminal_operations_have_the_wire_shape() {
    let open = RoomOp::TermOpen(Some(crate::protocol::TermSize {
        cols: 120,
        rows: 39,
    }));
    assert_eq!(open.method().name(), "term_open");
    assert_eq!(open.args(), vec![json!({"cols":120,"rows":39})]);
    assert_eq!(RoomOp::TermOpen(None).args(), vec![json!({})]);
    let detach = RoomOp::TermDetach(Some("t1".into()));
    assert_eq!(detach.method().name(), "term_detach");
    assert_eq!(detach.args(), vec![json!({"termId":"t1"})]);
    assert_eq!(RoomOp::TermClose(None).method().name(), "term_close");
    assert_eq!(RoomOp::TermClose(None).args(), vec![json!({})]);
}

fn reply(id: &str, status: Option<u16>) -> RpcAnswer {
    RpcAnswer {
        id: Value::String(id.into()),
        success: status.is_none(),
        result: status.is_none().then(|| json!({"ok": true})),
        error: status.map(|_| "busy".to_string()),
        status,
        details: None,
        retry_after_ms: None,
        done: true,
    }
}

#[test]
fn busy_answers_are_tried_again_then_shown() {
    let mut calls = Calls::default();
    let now = Instant::now();
    let (id, _) = calls.start(RoomOp::Exec("ls".into()));
    assert!(calls.finish(reply(&id, Some(503)), now).is_none());
    assert!(calls.due(now).is_empty(), "not yet");
    let later = calls.next_retry().unwrap();
    let mut again = calls.due(later);
    assert_eq!(again.len(), 1);
    for _ in 1..MAX_RETRIES {
        let (id, _) = again.remove(0);
        assert!(calls.finish(reply(&id, Some(429)), later).is_none());
        again = calls.due(calls.next_retry().unwrap());
    }
    let (id, _) = again.remove(0);
    let shown = calls.finish(reply(&id, Some(429)), later).unwrap();
    assert_eq!(shown.op, RoomOp::Exec("ls".into()));
    assert!(matches!(shown.result, Err(RpcError::Failed(ref s)) if s.status == 429));
    // Another answer is reported at once.
    let (id, _) = calls.start(RoomOp::Cleanup);
    assert!(
        calls
            .finish(reply(&id, None), later)
            .unwrap()
            .result
            .is_ok()
    );
    assert!(
        calls.finish(reply("r999", None), later).is_none(),
        "not ours"
    );
}

#[test]
fn a_rename_that_worked_names_the_next_connection() {
    let mut calls = Calls::default();
    let now = Instant::now();
    let (id, _) = calls.start(RoomOp::Rename("bob ".into()));
    let mut ok = reply(&id, None);
    ok.result = Some(json!({"name": "bob"}));
    assert!(calls.finish(ok, now).unwrap().result.is_ok());
    assert_eq!(calls.take_renamed().as_deref(), Some("bob"), "as stored");
    assert_eq!(calls.take_renamed(), None);
    let (id, _) = calls.start(RoomOp::Rename("x".repeat(40)));
    assert!(
        calls
            .finish(reply(&id, Some(400)), now)
            .unwrap()
            .result
            .is_err()
    );
    assert_eq!(
        calls.take_renamed(),
        None,
        "a refused rename changes nothing"
    );
}

#[test]
fn messages_go_one_at_a_time_in_the_order_written() {
    let (events, _rx) = mpsc::unbounded_channel();
    let mut calls = Calls::default();
    for text in ["one", "two", "three"] {
        calls.queue(RoomOp::to_agent(text)).unwrap();
    }
    assert!(calls.queue(RoomOp::Exec("ls".into())).is_err());
    let text_of = |frame: &ClientFrame| match frame {
        ClientFrame::Rpc { args, .. } => args[0]["text"].as_str().unwrap().to_string(),
        other => panic!("{other:?}"),
    };
    let (first, frame) = calls.next_message().unwrap();
    assert_eq!(text_of(&frame), "one");
    assert!(calls.next_message().is_none(), "one on its way at a time");
    calls.stored();
    let (_, frame) = calls.next_message().unwrap();
    assert_eq!(text_of(&frame), "two");
    // The connection drops before any answer: both go back in front
    // of "three", in order, to be sent again.
    calls.lose_all(&events, "dropped");
    let left: Vec<RoomOp> = calls.outbox_changed().unwrap();
    let texts = ["one", "two", "three"].map(RoomOp::to_agent);
    assert_eq!(left, texts);
    assert!(calls.outbox_changed().is_none(), "told once");
    assert!(calls.finish(reply(&first, None), Instant::now()).is_none());
    let (again, frame) = calls.next_message().unwrap();
    assert_eq!(text_of(&frame), "one");
    // Its answer lets the next go.
    assert!(calls.finish(reply(&again, None), Instant::now()).is_some());
    let (_, frame) = calls.next_message().unwrap();
    assert_eq!(text_of(&frame), "two");
}

#[test]
fn failures_read_as_http_errors() {
    let answer: RpcAnswer = serde_json::from_value(json!({
        "id": "1", "success": false, "error": "invalid request", "status": 400,
        "details": {"text": ["must not be empty"]}, "done": true
    }))
    .unwrap();
    let err = outcome(answer).unwrap_err();
    assert_eq!(
        err.to_string(),
        "400 Bad Request: invalid request; text: must not be empty"
    );
    let unknown: RpcAnswer = serde_json::from_value(json!({
        "id": "2", "success": false, "error": "unknown method \"x\"", "done": true
    }))
    .unwrap();
    assert_eq!(
        outcome(unknown).unwrap_err().to_string(),
        "unknown method \"x\""
    );
}
