//! The wire format: the envelopes (docs/DESIGN.md#the-envelope), snake_case JSON, versions, errors.

use switchboard::protocol::{self, DelegationRequest, DelegationResponse, ErrorCode, Priority, Status};

/// A request as an outside caller writes it (with a `constraints` key in the hand-off).
const SEED_REQUEST: &str = r#"{
  "request_id": "550e8400-e29b-41d4-a716-446655440000",
  "origin_employee": "prime-boss",
  "target_employee": "byte-doc",
  "user_id": "anon-123456",
  "parent_session_id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
  "child_session_id": null,
  "objective": "Extract receipt data from uploaded image",
  "input": "User uploaded receipt.jpg - extract amount, merchant, date",
  "constraints": { "max_tokens": 1200, "max_depth": 2, "deadline_ms": 15000 },
  "context_hints": ["receipt", "ocr"],
  "handoff_data": {
    "facts": ["User prefers detailed extraction"],
    "references": [{ "owner_scope": "receipt", "source_id": "file-abc123" }],
    "constraints": { "format": "concise", "max_tokens": 800 }
  }
}"#;

/// A response as an outside agent writes it (with the required `status`).
const SEED_RESPONSE: &str = r#"{
  "request_id": "550e8400-e29b-41d4-a716-446655440000",
  "target_employee": "byte-doc",
  "status": "success",
  "summary": "Extracted receipt: $45.99 at Starbucks on 2025-10-09",
  "result": "I successfully extracted all data from the receipt.",
  "artifacts": [{ "type": "json", "value": { "amount": 45.99, "merchant": "Starbucks" } }],
  "new_facts": ["User frequently visits Starbucks"],
  "used_sources": [{ "owner_scope": "receipt", "source_id": "file-abc123" }],
  "token_usage": { "prompt": 234, "completion": 156, "total": 390 }
}"#;

#[test]
fn the_seed_request_parses_with_defaults_for_the_additions() {
    let r = protocol::parse_request(SEED_REQUEST.as_bytes()).unwrap();
    assert_eq!(r.protocol_version, "1.0");
    assert_eq!(r.origin_employee.as_str(), "prime-boss");
    assert_eq!(r.constraints.deadline_ms, 15_000);
    assert_eq!(r.handoff_data.references[0].source_id, "file-abc123");
    assert!(r.handoff_data.extra.contains_key("constraints"), "free-form handoff keys are kept");
    assert_eq!(r.priority, Priority::Normal);
    assert_eq!(r.current_depth, 0);
}

#[test]
fn requests_and_responses_round_trip_in_snake_case() {
    let mut r = protocol::parse_request(SEED_REQUEST.as_bytes()).unwrap();
    r.task_note = Some("Max 120 words".into());
    r.idempotency_key = Some("k-1".into());
    r.priority = Priority::Urgent;
    let json = serde_json::to_value(&r).unwrap();
    for key in ["request_id", "origin_employee", "handoff_data", "task_note", "idempotency_key", "protocol_version"] {
        assert!(json.get(key).is_some(), "{key} missing in {json}");
    }
    assert_eq!(json["priority"], "urgent");
    assert_eq!(json["mode"], "persist");
    let back: DelegationRequest = serde_json::from_value(json).unwrap();
    assert_eq!(back, r);

    let resp: DelegationResponse = serde_json::from_str(SEED_RESPONSE).unwrap();
    assert_eq!(resp.status, Status::Success);
    assert_eq!(resp.new_facts[0].fact, "User frequently visits Starbucks");
    assert_eq!(resp.token_usage.total, 390);
    let again: DelegationResponse = serde_json::from_str(&serde_json::to_string(&resp).unwrap()).unwrap();
    assert_eq!(again, resp);
}

#[test]
fn an_unknown_major_version_is_refused_as_unsupported() {
    let v2 = SEED_REQUEST.replacen('{', r#"{"protocol_version": "2.0","#, 1);
    let err = protocol::parse_request(v2.as_bytes()).unwrap_err();
    assert_eq!(err.code, ErrorCode::UnsupportedVersion);
    // even when the rest of the envelope is of another shape
    let err = protocol::parse_request(br#"{"protocol_version":"3.1","totally":"different"}"#).unwrap_err();
    assert_eq!(err.code, ErrorCode::UnsupportedVersion);
}

#[test]
fn garbage_is_invalid_request_with_a_message_naming_the_problem() {
    let cases: &[(&[u8], &str)] = &[
        (b"", "EOF"),
        (b"{", "EOF"),
        (b"[]", "expected struct DelegationRequest"),
        (br#"{"request_id":"nope"}"#, "UUID"),
        (&SEED_REQUEST.replace("\"byte-doc\"", "\"Byte Doc\"").into_bytes(), "agent slug"),
        (&SEED_REQUEST.replace("\"max_depth\": 2", "\"max_depth\": -1").into_bytes(), "invalid value"),
        (&SEED_REQUEST.replacen('{', r#"{"surprise": 1,"#, 1).into_bytes(), "unknown field `surprise`"),
        (&SEED_REQUEST.replace("\"objective\"", "\"objectiv\"").into_bytes(), "objectiv"),
        (b"\xff\xfe", "expected value"),
    ];
    for (bytes, expected) in cases {
        let err = protocol::parse_request(bytes).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest, "{}", String::from_utf8_lossy(bytes));
        assert!(err.message.contains(expected), "{} !~ {expected}", err.message);
    }
}

#[test]
fn every_error_code_has_an_http_status_and_serializes_as_its_name() {
    let e = switchboard::DelegationError::from_code(ErrorCode::FanOutLimit);
    assert_eq!(serde_json::to_value(&e).unwrap()["code"], "FAN_OUT_LIMIT");
    assert_eq!(ErrorCode::UserMismatch.http_status(), 403);
    assert_eq!(ErrorCode::Unauthenticated.http_status(), 401);
}
