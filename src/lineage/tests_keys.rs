//! Keys on disk and their rotation, the trust store, garbage encodings and
//! the envelope check.

use std::time::Duration;

use proptest::prelude::*;

use super::tests::{MINUTE, NOW, honest, ring, root_claims, slug, world};
use super::*;
use crate::protocol::request::objective_hash;
use crate::protocol::{ChainLink, DelegationRequest, RequestId, UserId};

const DAY: u64 = 24 * 60 * MINUTE;

fn long_root(ring: &KeyRing) -> Token {
    let mut c = root_claims();
    c.issuer = ring.name().into();
    c.audience = ring.name().into();
    c.deadline_ms = NOW + 30 * DAY;
    ring.mint_root(c).unwrap()
}

fn trusting_itself(ring: &KeyRing) -> TrustStore {
    let mut t = TrustStore::new(ring.name());
    t.trust_ring(ring).unwrap();
    t
}

#[test]
fn a_token_of_a_rotated_key_verifies_until_the_key_expires() {
    let mut r = ring("a", 1);
    let old = long_root(&r);
    let old_id = r.current_id().unwrap();
    let new_id = r.rotate(NOW, Duration::from_millis(7 * DAY)).unwrap();
    assert_ne!(old_id, new_id);
    assert_eq!(r.current_id(), Some(new_id));
    let trust = trusting_itself(&r);
    assert_eq!(verify(&old.encode(), &trust, NOW + 6 * DAY).unwrap().key_id, old_id);
    let err = verify(&old.encode(), &trust, NOW + 7 * DAY).unwrap_err();
    assert_eq!((err.fault, err.code()), (Fault::KeyExpired, ErrorCode::Unauthenticated));
    // new tokens are signed with the new key, which does not expire
    let new = long_root(&r);
    assert_eq!(verify(&new.encode(), &trust, NOW + 20 * DAY).unwrap().key_id, new_id);
    let keys = r.public_keys();
    assert_eq!(
        keys.iter().map(|k| (k.id, k.expires_ms)).collect::<Vec<_>>(),
        [(old_id, Some(NOW + 7 * DAY)), (new_id, None)]
    );
}

#[test]
fn keys_are_generated_once_private_and_rotated_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let first = KeyRing::open(&keys, "a", NOW).unwrap();
    let id = first.current_id().unwrap();
    assert_eq!(id.to_string().len(), 16);
    let file = keys.join(format!("{id}.key"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&keys).unwrap().permissions().mode() & 0o777, 0o700);
    }
    // the same key at the next start
    assert_eq!(KeyRing::open(&keys, "a", NOW).unwrap().current_id(), Some(id));
    let token = long_root(&first);

    let mut ring = KeyRing::open(&keys, "a", NOW).unwrap();
    let new_id = ring.rotate(NOW, Duration::from_millis(7 * DAY)).unwrap();
    assert_eq!(std::fs::read_to_string(keys.join(format!("{id}.expires"))).unwrap(), (NOW + 7 * DAY).to_string());
    // after a restart: the new key signs, the old one still verifies
    let reopened = KeyRing::open(&keys, "a", NOW + DAY).unwrap();
    assert_eq!(reopened.current_id(), Some(new_id));
    assert!(verify(&token.encode(), &trusting_itself(&reopened), NOW + DAY).is_ok());
    // after its expiry the old key is gone, from the ring and the disk
    let later = KeyRing::open(&keys, "a", NOW + 8 * DAY).unwrap();
    assert_eq!(later.public_keys().len(), 1);
    assert!(!file.exists());
    assert_eq!(
        verify(&token.encode(), &trusting_itself(&later), NOW + 8 * DAY).unwrap_err().fault,
        Fault::UntrustedKey
    );
}

#[test]
fn a_rotation_cut_short_before_it_named_the_new_key_leaves_no_key_verifying_forever() {
    let dir = tempfile::tempdir().unwrap();
    let id = KeyRing::open(dir.path(), "a", NOW).unwrap().current_id().unwrap();
    // what `rotate` writes first: a new key file, then the old key's expiry;
    // the crash comes before `current` names the new key
    let mut ahead = KeyRing::open(dir.path(), "a", NOW).unwrap();
    let stray = ahead.rotate(NOW, Duration::from_millis(DAY)).unwrap();
    std::fs::write(dir.path().join("current"), id.to_string()).unwrap();
    let reopened = KeyRing::open(dir.path(), "a", NOW).unwrap();
    assert_eq!(reopened.current_id(), Some(id), "the old key still signs");
    let ids: Vec<KeyId> = reopened.public_keys().iter().map(|k| k.id).collect();
    assert_eq!(ids, [id], "the never-used key is not trusted");
    assert!(!dir.path().join(format!("{stray}.key")).exists());
}

#[test]
fn a_damaged_key_directory_is_an_error_not_a_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let id = KeyRing::open(dir.path(), "a", NOW).unwrap().current_id().unwrap();
    std::fs::write(dir.path().join(format!("{id}.key")), "not base64!").unwrap();
    let err = KeyRing::open(dir.path(), "a", NOW).unwrap_err();
    assert!(err.to_string().contains("not a base64 Ed25519 secret key"), "{err}");
    std::fs::write(dir.path().join("current"), "zz").unwrap();
    assert!(KeyRing::open(dir.path(), "a", NOW).unwrap_err().to_string().contains("not a key id"));
    assert!(KeyRing::open(dir.path(), "bad name!", NOW).is_err());
}

#[test]
fn trust_entries_come_from_config_and_bad_keys_are_named() {
    #[derive(serde::Deserialize)]
    struct File {
        trust: Vec<TrustEntry>,
    }
    let b = ring("b", 2);
    let text = format!(
        "[[trust]]\nname = \"b\"\npublic_key = \"{}\"\nmay_call = [\"tag-ai\"]\n\n\
         [[trust]]\nname = \"x\"\npublic_key = \"AQ\"\n",
        b.public_keys()[0].public_key
    );
    let file: File = toml::from_str(&text).unwrap();
    assert_eq!(file.trust[0].may_call, ["tag-ai"]);
    assert!(!file.trust[0].may_start_trees);
    let err = TrustStore::from_entries("c", &file.trust).unwrap_err();
    assert!(err.starts_with("trust[1] ('x'): public_key must be 32 bytes"), "{err}");
    assert!(TrustStore::from_entries("c", &file.trust[..1]).is_ok());
    let mut weak = file.trust[0].clone();
    let mut identity = [0u8; 32];
    identity[0] = 1;
    weak.public_key = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, identity);
    assert!(TrustStore::from_entries("c", &[weak]).unwrap_err().contains("weak"));
    let mut bad_call = file.trust[0].clone();
    bad_call.may_call = vec!["Not A Slug".into()];
    assert!(TrustStore::from_entries("c", &[bad_call]).unwrap_err().contains("may_call"));
    assert!(toml::from_str::<File>("[[trust]]\nname = \"b\"\npublic_key = \"x\"\nextra = 1\n").is_err());
}

#[test]
fn garbage_is_refused_with_a_clear_error() {
    let w = world();
    let cases: Vec<(String, Fault)> = vec![
        (String::new(), Fault::Malformed),
        ("!!!".into(), Fault::Malformed),
        ("a".into(), Fault::Malformed),
        ("AQ==".into(), Fault::Malformed),
        ("AgE".into(), Fault::Malformed),    // version 2
        ("AQA".into(), Fault::Malformed),    // no blocks
        ("ARE".into(), Fault::Malformed),    // 17 blocks
        ("AQEAAQ".into(), Fault::Malformed), // claims running past the end
        ("x".repeat(MAX_TEXT_LEN + 1), Fault::TooLarge),
    ];
    for (text, fault) in cases {
        let err = verify(&text, &w.at_c, NOW).unwrap_err();
        assert_eq!(err.fault, fault, "{text:.20}: {err}");
        assert_eq!(err.code(), ErrorCode::LineageInvalid);
        assert!(!err.message.is_empty());
    }
    // a valid token with a byte more
    let (_, _, t2) = honest(&w);
    let mut bytes = base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, t2.encode()).unwrap();
    bytes.push(0);
    let text = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &bytes);
    assert!(verify(&text, &w.at_c, NOW).unwrap_err().message.contains("after its last block"));
}

#[test]
fn a_token_never_grows_past_its_bound() {
    let a = ring("a", 1);
    let mut c = root_claims();
    c.max_depth = 40;
    c.tools = (0..60).map(|i| format!("tool-with-a-long-name-{i:02}")).collect();
    let mut token = a.mint_root(c.clone()).unwrap();
    let err = loop {
        let next =
            c.child(crate::protocol::RequestId::new(), Link::new(c.hop().unwrap().target.clone(), slug("x"), "o"), "a");
        match a.attenuate(&token, next.clone()) {
            Ok(t) => (token, c) = (t, next),
            Err(e) => break e,
        }
    };
    assert_eq!(err.fault, Fault::TooLarge, "{err}");
    assert!(token.encode().len() <= MAX_TEXT_LEN);
}

proptest! {
    #[test]
    fn no_text_makes_verify_panic(text in ".{0,300}") {
        let w = world();
        prop_assert!(verify(&text, &w.at_c, NOW).is_err());
    }

    #[test]
    fn no_bytes_make_verify_panic_or_pass(bytes in proptest::collection::vec(any::<u8>(), 0..600), head in 0u8..3) {
        let w = world();
        let mut bytes = bytes;
        if head > 0 && bytes.len() > 2 {
            bytes[0] = head; // a known version, so the layout is read further
            bytes[1] %= 4;
        }
        let text = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &bytes);
        prop_assert!(verify(&text, &w.at_c, NOW).is_err());
    }

    /// An honest token of either version with a few bytes changed, cut short
    /// or grown: refused, never a panic.
    #[test]
    fn no_change_to_an_honest_token_passes(
        v1 in any::<bool>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        extra in proptest::collection::vec(any::<u8>(), 0..3),
    ) {
        let w = world();
        let (token, at) = if v1 {
            let t1 = Token::decode(include_str!("token-v1.txt")).unwrap();
            (w.b.attenuate(&t1, super::tests::next_claims(&t1)).unwrap(), &w.at_c)
        } else {
            (super::tests::honest(&w).2, &w.at_c)
        };
        prop_assert!(verify(&token.encode(), at, NOW).is_ok());
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let original = base64::Engine::decode(&engine, token.encode()).unwrap();
        let mut bytes = original.clone();
        for (at, by) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= by;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        bytes.extend(extra);
        prop_assume!(bytes != original, "two flips of one byte undid each other");
        prop_assert!(verify(&base64::Engine::encode(&engine, &bytes), at, NOW).is_err());
    }
}

/// The envelope `b` sends to `c` for the honest hop t2.
fn envelope(claims: &Claims) -> DelegationRequest {
    let mut req = DelegationRequest::new(slug("byte-doc"), slug("tag-ai"), UserId::parse("ada").unwrap(), "tag", "");
    req.request_id = claims.request;
    req.root_request_id = Some(claims.tree);
    req.parent_request_id = claims.parent;
    req.current_depth = 1;
    req.chain = vec![
        ChainLink { agent: slug("prime-boss"), objective_hash: objective_hash("analyze my spending") },
        ChainLink { agent: slug("byte-doc"), objective_hash: objective_hash("extract") },
    ];
    req.constraints.max_depth = 4;
    req.constraints.max_tokens = 600;
    req.constraints.deadline_ms = 9 * MINUTE;
    req.tools = Some(vec!["money.read".into()]);
    req
}

#[test]
fn an_envelope_that_disagrees_with_its_token_names_the_field() {
    let w = world();
    let (_, _, t2) = honest(&w);
    let v = verify(&t2.encode(), &w.at_c, NOW).unwrap();
    check_envelope(&v.claims, &envelope(&v.claims), NOW, 0).unwrap();
    // lower limits are fine
    let mut lower = envelope(&v.claims);
    (lower.constraints.max_tokens, lower.constraints.deadline_ms, lower.tools) = (100, 1000, Some(vec![]));
    check_envelope(&v.claims, &lower, NOW, 0).unwrap();

    type Change = fn(&mut DelegationRequest);
    let changes: [(&str, Change); 13] = [
        ("request_id", |r| r.request_id = crate::protocol::RequestId::new()),
        ("root_request_id", |r| r.root_request_id = None),
        ("parent_request_id", |r| r.parent_request_id = None),
        ("user_id", |r| r.user_id = UserId::parse("eve").unwrap()),
        ("origin_employee", |r| r.origin_employee = slug("prime-boss")),
        ("target_employee", |r| r.target_employee = slug("crystal")),
        ("objective", |r| r.objective = "tag everything".into()),
        ("chain", |r| r.chain.clear()),
        ("current_depth", |r| r.current_depth = 0),
        ("constraints.max_depth", |r| r.constraints.max_depth = 8),
        ("constraints.max_tokens", |r| r.constraints.max_tokens = 601),
        ("constraints.deadline_ms", |r| r.constraints.deadline_ms = 9 * MINUTE + 1),
        ("tools", |r| r.tools = Some(vec!["money.read".into(), "shell".into()])),
    ];
    for (field, change) in changes {
        let mut req = envelope(&v.claims);
        change(&mut req);
        let err = check_envelope(&v.claims, &req, NOW, 0).unwrap_err();
        assert_eq!((err.fault, err.code()), (Fault::Mismatch(field), ErrorCode::LineageMismatch), "{field}");
        assert!(err.message.contains(field), "{}", err.message);
    }
    // the skew allowance covers the time the envelope spent in transit
    let mut late = envelope(&v.claims);
    late.constraints.deadline_ms = 9 * MINUTE + 200;
    check_envelope(&v.claims, &late, NOW, 500).unwrap();
}

#[test]
fn a_staged_key_signs_nothing_until_the_rotation_that_makes_it_current() {
    let dir = tempfile::tempdir().unwrap();
    let mut ring = KeyRing::open(dir.path(), "a", NOW).unwrap();
    let first = ring.current_id().unwrap();
    let next = ring.stage().unwrap();
    assert_ne!(next, first);
    assert_eq!(ring.stage().unwrap(), next, "staging twice gives the same next key");
    assert_eq!(ring.current_id(), Some(first), "the staged key does not sign");
    let listed: Vec<(KeyId, bool)> = ring.public_keys().iter().map(|k| (k.id, k.staged)).collect();
    assert_eq!(listed, [(first, false), (next, true)]);
    // another process (a restart) finds it staged, not an interrupted rotation
    let mut again = KeyRing::open(dir.path(), "a", NOW).unwrap();
    assert_eq!((again.current_id(), again.public_keys().len()), (Some(first), 2));
    assert_eq!(again.rotate(NOW, Duration::from_millis(DAY)).unwrap(), next, "the rotation signs with the staged key");
    let reopened = KeyRing::open(dir.path(), "a", NOW + 1).unwrap();
    assert_eq!(reopened.current_id(), Some(next));
    let states: Vec<(KeyId, bool, bool)> =
        reopened.public_keys().iter().map(|k| (k.id, k.expires_ms.is_some(), k.staged)).collect();
    assert_eq!(states, [(first, true, false), (next, false, false)], "the old key verifies until it expires");
    assert!(!dir.path().join("next").exists());
}

/// `[lineage]` for runtime `name` with its keys under `dir`.
fn lineage_config(name: &str, dir: &std::path::Path, token_version: u8) -> crate::config::LineageConfig {
    crate::config::LineageConfig {
        name: name.into(),
        key_dir: dir.join("keys"),
        keep_rotated_keys_hours: 1,
        token_version,
    }
}

/// A relay of a hop at `a` to `a` itself, to byte-doc.
fn to_itself(byte_doc: &crate::protocol::AgentSlug) -> Relay<'_> {
    Relay {
        request: crate::protocol::RequestId::new(),
        target: byte_doc,
        objective: "x",
        audience: "a",
        deadline_ms: u64::MAX / 2,
        budget: 10,
        max_depth: 4,
        tools: &[],
    }
}

#[test]
fn many_first_uses_at_once_make_one_key_and_a_rotation_is_seen() {
    let byte_doc = slug("byte-doc");
    let dir = tempfile::tempdir().unwrap();
    let config = lineage_config("a", dir.path(), 2);
    let authority = std::sync::Arc::new(Authority::new(&config, &[]).unwrap());
    let hop = Hop::root(root_claims());
    let signed: Vec<KeyId> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (authority, hop, key_dir, byte_doc) = (authority.clone(), hop.clone(), &config.key_dir, &byte_doc);
                s.spawn(move || {
                    let text = authority.relay(&hop, to_itself(byte_doc)).unwrap();
                    let (_, claims) = authority.verify(&text).unwrap();
                    assert_eq!(claims.audience, "a");
                    KeyRing::open(key_dir, "a", 0).unwrap().current_id().unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(signed.windows(2).all(|w| w[0] == w[1]), "one first key: {signed:?}");
    // another process rotates; within a second the authority signs with the new key
    let mut ring = KeyRing::open(&config.key_dir, "a", 0).unwrap();
    let new = ring.rotate(now_ms(), std::time::Duration::from_secs(3600)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let hop = Hop::root(root_claims());
    let text = authority.relay(&hop, to_itself(&byte_doc)).unwrap();
    assert_eq!(authority.verify(&text).map(|(_, c)| c.audience), Ok("a".to_string()));
    let mut trust = TrustStore::new("a");
    trust.trust_ring(&KeyRing::open(&config.key_dir, "a", 0).unwrap()).unwrap();
    assert_eq!(Token::decode(&text).unwrap().verify(&trust, NOW).unwrap().key_id, new);
}

#[test]
fn token_version_sets_the_format_of_the_trees_a_runtime_starts() {
    let byte_doc = slug("byte-doc");
    for version in [1u8, 2] {
        let dir = tempfile::tempdir().unwrap();
        let config = lineage_config("a", dir.path(), version);
        let authority = Authority::new(&config, &[]).unwrap();
        // a root and a local child, relayed: two blocks above the relay
        let root = Hop::root(root_claims());
        let c1 = root.claims().child(RequestId::new(), Link::new(slug("prime-boss"), slug("byte-doc"), "x"), "a");
        let text = authority.relay(&Hop::child(&root, c1), to_itself(&byte_doc)).unwrap();
        let token = Token::decode(&text).unwrap();
        let signatures = if version == 1 { 3 } else { 1 };
        assert_eq!((token.version(), token.hops(), token.signatures()), (version, 3, signatures));
        assert_eq!(authority.verify(&text).unwrap().1.audience, "a", "version {version} verifies");
    }
}

#[test]
fn an_answer_counts_as_a_peers_only_with_its_signature() {
    use super::reply::{check, sign};
    let w = world(); // c trusts a and b
    let id = RequestId::new();
    let body: &[u8] = br#"{"status":"success","result":"done"}"#;
    let by_b = sign(&w.b, id, body).unwrap();
    assert_eq!(check(&w.at_c, "b", id, body, Some(&by_b), NOW), Ok(()));
    let stranger = sign(&ring("b", 9), id, body).unwrap();
    let by_a = sign(&w.a, id, body).unwrap();
    let cases: [(Option<&str>, RequestId, &[u8], Fault); 6] = [
        (None, id, body, Fault::BadSignature),
        (Some(&by_b), RequestId::new(), body, Fault::BadSignature),
        (Some(&by_b), id, br#"{"status":"success","result":"forged"}"#, Fault::BadSignature),
        (Some(&by_a), id, body, Fault::WrongIssuer),
        (Some(&stranger), id, body, Fault::UntrustedKey),
        (Some("not a signature"), id, body, Fault::Malformed),
    ];
    for (i, (signature, id, body, fault)) in cases.into_iter().enumerate() {
        let err = check(&w.at_c, "b", id, body, signature, NOW).unwrap_err();
        assert_eq!(err.fault, fault, "case {i}: {err}");
    }
    // b's key past its expiry
    let mut expired = super::tests::entry(&w.b, &[], false);
    expired.expires_ms = Some(NOW - 1);
    let at = TrustStore::from_entries("c", &[expired]).unwrap();
    assert_eq!(check(&at, "b", id, body, Some(&by_b), NOW).unwrap_err().fault, Fault::KeyExpired);
    // no key of that name
    assert_eq!(check(&w.at_c, "workers", id, body, Some(&by_b), NOW).unwrap_err().fault, Fault::WrongIssuer);
    // a runtime checks a peer's answers only when a [[trust]] entry names it
    // (its own keys do not: a fleet may share its name with keys of its own)
    let dir = tempfile::tempdir().unwrap();
    let config = lineage_config("c", dir.path(), 2);
    let authority = Authority::new(&config, &[super::tests::entry(&w.b, &[], false)]).unwrap();
    assert_eq!(authority.check_reply("b", id, body, Some(&by_b)), Ok(ReplyCheck::Signed));
    assert_eq!(authority.check_reply("b", id, body, None).unwrap_err().fault, Fault::BadSignature);
    assert_eq!(authority.check_reply("workers", id, body, None), Ok(ReplyCheck::Unchecked));
    assert_eq!(authority.check_reply("c", id, body, None), Ok(ReplyCheck::Unchecked));
}
