//! The wire shapes of src/protocol/mod.rs and its rules for names (names.rs).

use super::*;

#[test]
fn room_ids_follow_the_names_rule() {
    for ok in ["a", "room-1", "A_b-9", &"x".repeat(63)] {
        assert!(valid_room_id(ok), "{ok}");
    }
    for bad in [
        "",
        "-a",
        "a-",
        "_a",
        "a b",
        "a/b",
        "é",
        &"x".repeat(64),
        "a.b",
    ] {
        assert!(!valid_room_id(bad), "{bad}");
    }
}

#[test]
fn names_are_one_to_32_printable_characters() {
    assert!(name_problem("ada").is_none());
    assert!(name_problem(&"é".repeat(32)).is_none());
    assert!(name_problem("").is_some());
    assert!(name_problem(&"a".repeat(33)).is_some());
    assert!(name_problem("a\nb").is_some());
    // Invisible characters and ones that move text would let a name pass for another's.
    for sneaky in [
        "ad\u{202e}a",
        "a\u{200b}b",
        "a\u{2028}b",
        "\u{feff}ada",
        "a\u{2066}b",
    ] {
        assert_eq!(
            name_problem(sneaky),
            Some("must be printable characters"),
            "{sneaky:?}"
        );
    }
    // Joiners stay: scripts and emoji need them.
    assert!(name_problem("👩\u{200d}💻").is_none());
    assert!(name_problem("می\u{200c}خواهم").is_none());
}

#[test]
fn frames_have_the_wire_shape() {
    let frame = ServerFrame::Exec(ExecFrame::Complete {
        exec_id: "e1".into(),
        exit_code: Some(0),
        duration: 3,
        timed_out: false,
        truncated: true,
        interrupted: false,
        error: None,
        cwd: Some("/workspace/app".into()),
    });
    let json = serde_json::to_value(&frame).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"type":"duet_exec","phase":"complete","execId":"e1",
            "exitCode":0,"duration":3,"truncated":true,"cwd":"/workspace/app"})
    );
    let typing: ClientFrame = serde_json::from_str(r#"{"type":"duet_typing"}"#).unwrap();
    assert_eq!(typing, ClientFrame::Typing {});
    let ai = ServerFrame::Ai {
        phase: AiPhase::Delta,
        turn_id: "t1".into(),
        text: Some("hi".into()),
        error: None,
        by_connection: None,
    };
    assert_eq!(
        serde_json::to_string(&ai).unwrap(),
        r#"{"type":"duet_ai","phase":"delta","turnId":"t1","text":"hi"}"#
    );
}

#[test]
fn records_have_the_wire_shape() {
    let record: DuetMessage = serde_json::from_value(serde_json::json!({
        "id":"9","role":"system","text":"bob renamed to ann","ts":1,
        "event":{"kind":"rename","by":"bob","from":"bob","to":"ann"}}))
    .unwrap();
    assert_eq!(record.event.as_ref().and_then(Event::by), Some("bob"));
    let unknown: DuetMessage = serde_json::from_value(serde_json::json!({
        "id":"9","role":"system","text":"?","ts":1,"event":{"kind":"new_kind","by":"x"}}))
    .unwrap();
    assert_eq!(unknown.event, Some(Event::Other));
    let cancel = Event::Cancel {
        by: "ann".into(),
        turn_id: "t1".into(),
    };
    assert_eq!(
        serde_json::to_value(&cancel).unwrap(),
        serde_json::json!({"kind":"cancel","by":"ann","turnId":"t1"})
    );
}

#[test]
fn env_names_are_identifiers() {
    assert!(valid_env_name("A_1"));
    assert!(valid_env_name("_x"));
    assert!(!valid_env_name("1A"));
    assert!(!valid_env_name("A-B"));
    assert!(!valid_env_name(""));
}

#[test]
fn timestamps_are_iso_8601() {
    assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso_timestamp(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
}

#[test]
fn capping_keeps_characters_whole() {
    assert_eq!(cap_text("héllo", 2), ("h".to_string(), true));
    assert_eq!(cap_text("abc", 3), ("abc".to_string(), false));
}
