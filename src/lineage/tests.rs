//! The chain: honest hops verify; every widening is refused by `attenuate`
//! and, signed anyway with a trusted key, by `verify`.

use super::*;
use crate::protocol::{AgentSlug, RequestId, UserId};

pub(super) const NOW: u64 = 1_800_000_000_000;
pub(super) const MINUTE: u64 = 60_000;

pub(super) fn slug(s: &str) -> AgentSlug {
    AgentSlug::parse(s).unwrap()
}

pub(super) fn ring(name: &str, seed: u8) -> KeyRing {
    KeyRing::from_seed(name, [seed; 32]).unwrap()
}

pub(super) fn entry(ring: &KeyRing, may_call: &[&str], may_start_trees: bool) -> TrustEntry {
    TrustEntry {
        name: ring.name().into(),
        public_key: ring.public_keys()[0].public_key.clone(),
        may_call: may_call.iter().map(|s| s.to_string()).collect(),
        may_start_trees,
        expires_ms: None,
    }
}

/// Three runtimes: `a` runs Prime (the root), `b` runs byte-doc, `c` runs tag-ai.
pub(super) struct World {
    pub a: KeyRing,
    pub b: KeyRing,
    pub c: KeyRing,
    /// What `b` trusts: `a`, which may call byte-doc and start trees.
    pub at_b: TrustStore,
    /// What `c` trusts: `a` (trees) and `b`, which may call tag-ai.
    pub at_c: TrustStore,
}

pub(super) fn world() -> World {
    let (a, b, c) = (ring("a", 1), ring("b", 2), ring("c", 3));
    let at_b = TrustStore::from_entries("b", &[entry(&a, &["byte-doc"], true)]).unwrap();
    let at_c = TrustStore::from_entries("c", &[entry(&a, &[], true), entry(&b, &["tag-ai"], false)]).unwrap();
    World { a, b, c, at_b, at_c }
}

pub(super) fn root_claims() -> Claims {
    let id = RequestId::new();
    Claims {
        tree: id,
        parent: None,
        request: id,
        user: UserId::parse("ada").unwrap(),
        depth: 0,
        max_depth: 4,
        fan_out: 3,
        deadline_ms: NOW + 10 * MINUTE,
        budget: 1200,
        tools: Claims::tool_set(["search", "email", "money.read"]),
        path: vec![Link::new(slug("user"), slug("prime-boss"), "analyze my spending")],
        issuer: "a".into(),
        audience: "a".into(),
    }
}

/// root (at a) → byte-doc (a to b) → tag-ai (b to c): the tokens after each hop.
pub(super) fn honest(w: &World) -> (Token, Token, Token) {
    let root = w.a.mint_root(root_claims()).unwrap();
    let c0 = root.claims().unwrap().pop().unwrap();
    let mut c1 = c0.child(RequestId::new(), Link::new(slug("prime-boss"), slug("byte-doc"), "extract"), "b");
    c1.budget = 900;
    c1.deadline_ms -= MINUTE;
    let t1 = w.a.attenuate(&root, c1.clone()).unwrap();
    let mut c2 = c1.child(RequestId::new(), Link::new(slug("byte-doc"), slug("tag-ai"), "tag"), "c");
    c2.budget = 600;
    c2.tools = Claims::tool_set(["money.read"]);
    let t2 = w.b.attenuate(&t1, c2).unwrap();
    (root, t1, t2)
}

/// The claims `b` would send to `c` from an honest `t1`.
pub(super) fn next_claims(t1: &Token) -> Claims {
    let c1 = t1.claims().unwrap().pop().unwrap();
    c1.child(RequestId::new(), Link::new(slug("byte-doc"), slug("tag-ai"), "tag"), "c")
}

#[test]
fn an_honest_chain_of_three_hops_verifies_at_each_hop() {
    let w = world();
    let (_, t1, t2) = honest(&w);
    let at_b = verify(&t1.encode(), &w.at_b, NOW).unwrap();
    assert_eq!((at_b.hops, at_b.claims.depth, at_b.claims.budget), (2, 1, 900));
    assert_eq!(at_b.key_id, w.a.current_id().unwrap());
    let text = t2.encode();
    assert!(text.len() <= MAX_TEXT_LEN && !text.contains('='), "{}", text.len());
    let v = verify(&text, &w.at_c, NOW).unwrap();
    assert_eq!(v.hops, 3);
    assert_eq!(v.key_id, w.b.current_id().unwrap());
    let c = &v.claims;
    assert_eq!((c.depth, c.max_depth, c.budget, c.deadline_ms), (2, 4, 600, NOW + 9 * MINUTE));
    assert_eq!(c.tools, vec!["money.read".to_string()]);
    assert_eq!(c.parent, Some(at_b.claims.request));
    assert_eq!(c.tree, at_b.claims.tree);
    let path: Vec<_> = c.path.iter().map(|l| (l.origin.as_str(), l.target.as_str())).collect();
    assert_eq!(path, [("user", "prime-boss"), ("prime-boss", "byte-doc"), ("byte-doc", "tag-ai")]);
    assert_eq!((c.issuer.as_str(), c.audience.as_str()), ("b", "c"));
}

type Widen = fn(&mut Claims);

/// Each widening a hostile `b` might try on the hop it sends to `c`, and the claim named.
fn widenings() -> Vec<(&'static str, Widen, Field)> {
    vec![
        (
            "depth reset to 0",
            |c| {
                c.depth = 0;
                c.path = vec![c.path[2].clone()];
                c.path[0].origin = slug("user");
            },
            Field::Depth,
        ),
        ("higher max depth", |c| c.max_depth = 8, Field::MaxDepth),
        ("larger fan-out", |c| c.fan_out = 10, Field::FanOut),
        ("longer deadline", |c| c.deadline_ms += MINUTE, Field::Deadline),
        ("larger budget", |c| c.budget = 5000, Field::Budget),
        ("an extra tool", |c| c.tools = Claims::tool_set(["money.read", "search", "shell"]), Field::Tools),
        ("another user", |c| c.user = UserId::parse("eve").unwrap(), Field::User),
        ("another tree", |c| c.tree = RequestId::new(), Field::Tree),
        ("a parent that is not the previous request", |c| c.parent = Some(RequestId::new()), Field::Parent),
        ("the previous request id again", |c| c.request = c.parent.unwrap(), Field::Request),
        ("a rewritten path", |c| c.path[0] = Link::new(slug("user"), slug("prime-boss"), "other"), Field::Path),
        (
            "a path that skips the holder",
            |c| {
                c.path[1] = Link::new(slug("prime-boss"), slug("crystal"), "extract");
                c.path[2].origin = slug("crystal");
            },
            Field::Path,
        ),
    ]
}

#[test]
fn attenuate_refuses_every_widening_and_produces_nothing() {
    let w = world();
    let (_, t1, _) = honest(&w);
    for (what, widen, field) in widenings() {
        let mut c = next_claims(&t1);
        widen(&mut c);
        let err = w.b.attenuate(&t1, c).unwrap_err();
        assert_eq!(err.fault, Fault::Widens(field), "{what}: {err}");
        assert_eq!(err.code(), ErrorCode::LineageInvalid, "{what}");
        assert!(err.message.contains(field.as_str()), "{what}: {}", err.message);
    }
}

#[test]
fn verify_refuses_every_widening_signed_with_a_trusted_key() {
    // A valid key does not let a hop widen: b signs the widened hop itself.
    let w = world();
    let (_, t1, _) = honest(&w);
    for (what, widen, field) in widenings() {
        let mut c = next_claims(&t1);
        widen(&mut c);
        let forged = w.b.forge(&t1, &c).unwrap();
        let err = verify(&forged.encode(), &w.at_c, NOW).unwrap_err();
        assert_eq!(err.fault, Fault::Widens(field), "{what}: {err}");
        assert_eq!(err.code(), ErrorCode::LineageInvalid, "{what}");
    }
}

#[test]
fn a_dropped_path_or_unsorted_tools_is_not_well_formed() {
    let w = world();
    let (_, t1, _) = honest(&w);
    let forms: [Widen; 4] = [
        |c| c.path.truncate(1),
        |c| c.path.clear(),
        |c| c.tools = vec!["search".into(), "money.read".into()],
        |c| c.path[2].objective_hash = "NOTHEX!!".into(),
    ];
    for widen in forms {
        let mut c = next_claims(&t1);
        widen(&mut c);
        assert_eq!(w.b.attenuate(&t1, c.clone()).unwrap_err().fault, Fault::Form);
        let forged = w.b.forge(&t1, &c).unwrap();
        assert_eq!(verify(&forged.encode(), &w.at_c, NOW).unwrap_err().fault, Fault::Form);
    }
}

#[test]
fn a_hop_signed_by_a_runtime_it_was_not_sent_to_is_refused() {
    // t1 was sent to b; c (trusted at c) cannot sign the next hop in b's place.
    let w = world();
    let (_, t1, _) = honest(&w);
    assert_eq!(w.c.attenuate(&t1, next_claims(&t1)).unwrap_err().fault, Fault::Widens(Field::Issuer));
    let mut at_c = w.at_c.clone();
    at_c.trust_ring(&w.c).unwrap();
    let mut c = next_claims(&t1);
    c.issuer = "c".into();
    let forged = w.c.forge(&t1, &c).unwrap();
    assert_eq!(verify(&forged.encode(), &at_c, NOW).unwrap_err().fault, Fault::Widens(Field::Issuer));
    // and b's key cannot claim to be a
    let mut c = next_claims(&t1);
    c.issuer = "a".into();
    let forged = w.b.forge(&t1, &c).unwrap();
    let err = verify(&forged.encode(), &w.at_c, NOW).unwrap_err();
    assert_eq!((err.fault, err.code()), (Fault::WrongIssuer, ErrorCode::Unauthenticated));
}

#[test]
fn the_root_rules_and_who_may_start_a_tree() {
    let w = world();
    for broken in [|c: &mut Claims| c.parent = Some(RequestId::new()), |c: &mut Claims| c.tree = RequestId::new()] {
        let mut c = root_claims();
        broken(&mut c);
        assert_eq!(w.a.mint_root(c).unwrap_err().fault, Fault::NotRoot);
    }
    // b may not start trees at c: a fresh root of its own is refused
    let mut c = root_claims();
    c.issuer = "b".into();
    c.audience = "c".into();
    c.path = vec![Link::new(slug("byte-doc"), slug("tag-ai"), "tag")];
    let root = w.b.mint_root(c).unwrap();
    let err = verify(&root.encode(), &w.at_c, NOW).unwrap_err();
    assert_eq!((err.fault, err.code()), (Fault::NotAllowed, ErrorCode::DelegationNotAllowed));
}

#[test]
fn a_call_beyond_may_call_is_not_allowed() {
    let w = world();
    let (_, t1, _) = honest(&w);
    let mut c = next_claims(&t1);
    c.path[2].target = slug("crystal");
    let t2 = w.b.attenuate(&t1, c).unwrap();
    let err = verify(&t2.encode(), &w.at_c, NOW).unwrap_err();
    assert_eq!((err.fault, err.code()), (Fault::NotAllowed, ErrorCode::DelegationNotAllowed));
}

#[test]
fn an_expired_token_is_refused_as_a_passed_deadline() {
    let w = world();
    let (_, _, t2) = honest(&w);
    let text = t2.encode();
    assert!(verify(&text, &w.at_c, NOW + 9 * MINUTE - 1).is_ok());
    let err = verify(&text, &w.at_c, NOW + 9 * MINUTE).unwrap_err();
    assert_eq!((err.fault, err.code()), (Fault::Expired, ErrorCode::DeadlineExceeded));
}

#[test]
fn an_untrusted_key_is_refused_anywhere_in_the_chain() {
    let w = world();
    let x = ring("b", 9); // claims b's name, holds another key
    let (_, t1, _) = honest(&w);
    let t2 = x.attenuate(&t1, next_claims(&t1)).unwrap();
    let err = verify(&t2.encode(), &w.at_c, NOW).unwrap_err();
    assert_eq!((err.fault, err.code()), (Fault::UntrustedKey, ErrorCode::Unauthenticated));
    // a root signed by a key c does not know
    let mut c = root_claims();
    c.audience = "c".into();
    let err = verify(&ring("a", 7).mint_root(c).unwrap().encode(), &w.at_c, NOW).unwrap_err();
    assert_eq!(err.fault, Fault::UntrustedKey);
}

#[test]
fn a_token_for_another_runtime_or_a_cut_chain_is_refused() {
    let w = world();
    let (_, t1, t2) = honest(&w);
    // t1 is b's: c refuses it (a hostile b replaying its own token at c)
    assert_eq!(verify(&t1.encode(), &w.at_c, NOW).unwrap_err().fault, Fault::WrongAudience);
    // the last hop cut off: a prefix is addressed to b
    assert_eq!(verify(&t2.without_block(2).encode(), &w.at_c, NOW).unwrap_err().fault, Fault::WrongAudience);
    // a block cut from the middle or blocks swapped: the signatures chain no more
    for cut in [t2.without_block(1), t2.without_block(0), t2.swapped(1, 2)] {
        let err = verify(&cut.encode(), &w.at_c, NOW).unwrap_err();
        assert_eq!((err.fault, err.code()), (Fault::BadSignature, ErrorCode::Unauthenticated));
    }
}

#[test]
fn a_tampered_byte_anywhere_is_refused() {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let w = world();
    let (_, _, t2) = honest(&w);
    let bytes = URL_SAFE_NO_PAD.decode(t2.encode()).unwrap();
    for i in (0..bytes.len()).step_by(5).chain([bytes.len() - 1]) {
        let mut b = bytes.clone();
        b[i] ^= 0x01;
        let err = verify(&URL_SAFE_NO_PAD.encode(&b), &w.at_c, NOW).unwrap_err();
        assert!(matches!(err.fault, Fault::BadSignature | Fault::UntrustedKey | Fault::Malformed), "byte {i}: {err}");
    }
}

#[test]
fn errors_become_delegation_errors_with_their_code() {
    let e = LineageError::new(Fault::Mismatch("user_id"), "the envelope's 'user_id' disagrees");
    let d: crate::protocol::DelegationError = e.clone().into();
    assert_eq!(d.code, ErrorCode::LineageMismatch);
    assert_eq!(d.message, e.message);
    assert!(e.to_string().starts_with("LINEAGE_MISMATCH: "));
}

/// `b`'s byte-doc is a proxy: it relays its own hop to `c`'s tag-ai.
fn relay_claims(t1: &Token) -> Claims {
    let c1 = t1.claims().unwrap().pop().unwrap();
    let mut c = c1.child(RequestId::new(), Link::new(slug("prime-boss"), slug("tag-ai"), "extract, tokenized"), "c");
    c.depth = c1.depth;
    c.path.remove(c1.path.len() - 1);
    c
}

#[test]
fn a_relay_keeps_the_depth_and_the_origin_and_may_rename_the_target() {
    let w = world();
    let (_, t1, _) = honest(&w);
    let relayed = w.b.attenuate(&t1, relay_claims(&t1)).unwrap();
    let v = verify(&relayed.encode(), &w.at_c, NOW).unwrap();
    assert_eq!((v.claims.depth, v.claims.path.len(), v.hops), (1, 2, 3));
    let last = v.claims.hop().unwrap();
    assert_eq!((last.origin.as_str(), last.target.as_str()), ("prime-boss", "tag-ai"));
    // a relay may not change who delegated, nor skip or add a link
    let changes: [(Widen, Field); 3] = [
        (|c| c.path[1].origin = slug("crystal"), Field::Path),
        (|c| c.path.push(Link::new(slug("tag-ai"), slug("byte-doc"), "x")), Field::Depth),
        (|c| c.budget = 5000, Field::Budget),
    ];
    for (change, field) in changes {
        let mut c = relay_claims(&t1);
        change(&mut c);
        let fault = w.b.attenuate(&t1, c).unwrap_err().fault;
        assert!(fault == Fault::Widens(field) || fault == Fault::Form, "{fault:?} for {field:?}");
    }
}

#[test]
fn a_hop_is_signed_only_when_it_leaves_and_then_once() {
    let w = world();
    let root = Hop::root(root_claims());
    let c0 = root.claims().clone();
    let mut c1 = c0.child(RequestId::new(), Link::new(slug("prime-boss"), slug("byte-doc"), "extract"), "a");
    c1.budget = 700;
    let child = Hop::child(&root, c1.clone());
    let next = Relay {
        request: RequestId::new(),
        target: &slug("byte-doc"),
        objective: "extract",
        audience: "b",
        deadline_ms: NOW + 5 * MINUTE,
        budget: 2_000,
        max_depth: 9,
        tools: &["email".to_string(), "shell".to_string()],
    };
    let token = child.relay(&w.a, next).unwrap();
    let v = verify(&token.encode(), &w.at_b, NOW).unwrap();
    // the relay is as narrow as the narrowest of the node and what was asked
    let c = &v.claims;
    assert_eq!((c.budget, c.max_depth, c.deadline_ms, v.hops), (700, 4, NOW + 5 * MINUTE, 3));
    assert_eq!(c.tools, ["email"], "a tool the node lacks is not granted");
    assert_eq!((c.issuer.as_str(), c.audience.as_str(), c.parent), ("a", "b", Some(c1.request)));
    // the blocks above were signed once and kept
    assert_eq!(child.token(&w.a).unwrap(), child.token(&w.a).unwrap());
    assert_eq!(child.token(&w.a).unwrap().hops(), 2);
}

#[test]
fn a_runtime_signs_once_for_its_consecutive_blocks() {
    let w = world();
    let (root, t1, t2) = honest(&w);
    assert_eq!((root.hops(), root.signatures(), root.version()), (1, 1, 2));
    // a's root and a's hop to b: one signature, a's, over both
    assert_eq!((t1.hops(), t1.signatures()), (2, 1));
    // b's hop adds its own
    assert_eq!((t2.hops(), t2.signatures()), (3, 2));
    assert_eq!(verify(&t2.encode(), &w.at_c, NOW).unwrap().hops, 3);
    // a root, a local child and the relay out: three blocks, one signature
    let root = Hop::root(root_claims());
    let c1 = root.claims().child(RequestId::new(), Link::new(slug("prime-boss"), slug("byte-doc"), "extract"), "a");
    let child = Hop::child(&root, c1);
    let next = Relay {
        request: RequestId::new(),
        target: &slug("byte-doc"),
        objective: "extract",
        audience: "b",
        deadline_ms: NOW + MINUTE,
        budget: 500,
        max_depth: 4,
        tools: &[],
    };
    let relayed = child.relay(&w.a, next).unwrap();
    assert_eq!((relayed.hops(), relayed.signatures()), (3, 1));
    assert_eq!(verify(&relayed.encode(), &w.at_b, NOW).unwrap().claims.budget, 500);
}

#[test]
fn an_unsigned_block_is_covered_only_by_the_next_block_of_its_key() {
    let w = world();
    let (_, t1, t2) = honest(&w);
    let refused = |t: &Token, at: &TrustStore| verify(&t.encode(), at, NOW).unwrap_err();
    // the unsigned root's claims changed (a wider budget, still well formed):
    // a's signature on the next block no longer covers them
    let root = serde_json::to_string(&t1.claims().unwrap()[0]).unwrap();
    let wider = root.replace("\"budget\":1200", "\"budget\":9999");
    assert_ne!(root, wider);
    let err = refused(&t1.with_claims(0, wider.into_bytes()), &w.at_b);
    assert_eq!((err.fault, err.code()), (Fault::BadSignature, ErrorCode::Unauthenticated));
    // a hostile b strips a's signature: a's blocks are followed by b's key
    let err = refused(&t2.without_signature(1), &w.at_c);
    assert_eq!((err.fault, err.code()), (Fault::BadSignature, ErrorCode::Unauthenticated), "{err}");
    assert!(err.message.contains("block 1 is not signed"), "{err}");
    // an unsigned last block is not a token
    let err = refused(&t1.without_signature(1), &w.at_b);
    assert_eq!((err.fault, err.code()), (Fault::Malformed, ErrorCode::LineageInvalid));
    // a signature flag that is neither 0 nor 1
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut bytes = URL_SAFE_NO_PAD.decode(t1.encode()).unwrap();
    let claims_len = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
    let flag = 2 + 2 + claims_len + 8;
    assert_eq!(bytes[flag], 0, "the root is unsigned");
    bytes[flag] = 7;
    let err = verify(&URL_SAFE_NO_PAD.encode(&bytes), &w.at_b, NOW).unwrap_err();
    assert_eq!(err.fault, Fault::Malformed);
    assert!(err.message.contains("signature flag"), "{err}");
}

/// A 2-hop token (a's root, a's hop to b's byte-doc) as the version 1 code
/// made it: `world()`'s keys, tree 00…01, request 00…02.
const TOKEN_V1: &str = include_str!("token-v1.txt");

#[test]
fn version_1_tokens_still_verify_and_extend_as_version_1() {
    let w = world();
    let t1 = Token::decode(TOKEN_V1).unwrap();
    assert_eq!((t1.version(), t1.hops(), t1.signatures()), (1, 2, 2));
    let v = verify(TOKEN_V1, &w.at_b, NOW).unwrap();
    assert_eq!((v.claims.budget, v.claims.audience.as_str(), v.hops), (900, "b", 2));
    // b extends it in its own version: every block signed over the previous signature
    let t2 = w.b.attenuate(&t1, next_claims(&t1)).unwrap();
    assert_eq!((t2.version(), t2.signatures()), (1, 3));
    assert_eq!(verify(&t2.encode(), &w.at_c, NOW).unwrap().hops, 3);
    // and a version 1 token is still refused when any byte changes
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let bytes = URL_SAFE_NO_PAD.decode(TOKEN_V1.trim()).unwrap();
    for i in (0..bytes.len()).step_by(7) {
        let mut b = bytes.clone();
        b[i] ^= 0x01;
        let err = verify(&URL_SAFE_NO_PAD.encode(&b), &w.at_b, NOW).unwrap_err();
        assert!(matches!(err.fault, Fault::BadSignature | Fault::UntrustedKey | Fault::Malformed), "byte {i}: {err}");
    }
}

/// A receiver verifies a signature once: a later hop of the same tree (or a
/// fan-out's next child) that carries the same prefix costs one Ed25519
/// verification, its new block's. What a hit skips is only the arithmetic:
/// a changed byte is a different signature to verify, and a key that
/// expired since is refused before the cache is asked.
#[test]
fn a_prefix_seen_before_is_not_verified_again_and_a_hit_skips_no_rule() {
    let w = world();
    let (_, t1, t2) = honest(&w);
    let before = w.at_c.signatures_verified();
    verify(&t2.encode(), &w.at_c, NOW).unwrap();
    assert_eq!(w.at_c.signatures_verified() - before, 2, "a's block and b's, the first time");
    verify(&t2.encode(), &w.at_c, NOW).unwrap();
    assert_eq!(w.at_c.signatures_verified() - before, 2, "the same token again: nothing verified");
    // b's second child of the same node: only b's new signature is new
    let sibling = w.b.attenuate(&t1, next_claims(&t1)).unwrap();
    verify(&sibling.encode(), &w.at_c, NOW).unwrap();
    assert_eq!(w.at_c.signatures_verified() - before, 3);

    // a changed byte after the honest token was seen is still refused
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let bytes = URL_SAFE_NO_PAD.decode(t2.encode()).unwrap();
    for i in (0..bytes.len()).step_by(7).chain([bytes.len() - 1]) {
        let mut b = bytes.clone();
        b[i] ^= 0x01;
        assert!(verify(&URL_SAFE_NO_PAD.encode(&b), &w.at_c, NOW).is_err(), "byte {i}");
    }
    // a clone of the store shares what it has seen; a store made anew has seen nothing
    let (clone, seen) = (w.at_c.clone(), w.at_c.signatures_verified());
    verify(&t2.encode(), &clone, NOW).unwrap();
    assert_eq!(clone.signatures_verified(), seen, "the clone verified nothing");

    // a key that expires: seen while valid, refused once expired
    let mut a_entry = entry(&w.a, &[], true);
    a_entry.expires_ms = Some(NOW + MINUTE);
    let at_c = TrustStore::from_entries("c", &[a_entry, entry(&w.b, &["tag-ai"], false)]).unwrap();
    assert_eq!(at_c.signatures_verified(), 0);
    verify(&t2.encode(), &at_c, NOW).unwrap();
    let err = verify(&t2.encode(), &at_c, NOW + 2 * MINUTE).unwrap_err();
    assert_eq!(err.fault, Fault::KeyExpired, "{err}");
}
