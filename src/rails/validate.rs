//! Envelope validation: what serde's types cannot say (version, sizes, empty
//! objectives, absurd limits). Every failure names the field to fix.

use crate::config::Limits;
use crate::protocol::{DelegationError, DelegationRequest, version};

/// The longest objective an envelope may carry (details go in its input).
pub(crate) const MAX_OBJECTIVE_BYTES: usize = 4 * 1024;
const MAX_HINTS: usize = 64;
const MAX_CHAIN: usize = 64;
const MAX_IDEMPOTENCY_KEY: usize = 256;

pub(crate) fn request(req: &DelegationRequest, limits: &Limits) -> Result<(), DelegationError> {
    version::check(&req.protocol_version)?;
    let invalid = |m: String| Err(DelegationError::invalid(m));
    if req.objective.trim().is_empty() {
        return invalid("objective is empty: say in a few words what the target should achieve".into());
    }
    if req.objective.len() > MAX_OBJECTIVE_BYTES {
        return invalid(format!(
            "objective is {} bytes; keep it under {MAX_OBJECTIVE_BYTES} and put details in input",
            req.objective.len()
        ));
    }
    let input_size = req.input.len() + req.task_note.as_ref().map_or(0, String::len);
    if input_size > limits.max_input_bytes {
        return invalid(format!("input is {input_size} bytes; the limit is {} bytes", limits.max_input_bytes));
    }
    let c = &req.constraints;
    if c.max_tokens == 0 {
        return invalid("constraints.max_tokens must be at least 1".into());
    }
    if c.max_depth == 0 {
        return invalid("constraints.max_depth must be at least 1".into());
    }
    if c.deadline_ms == 0 {
        return invalid("constraints.deadline_ms must be at least 1".into());
    }
    // limits beyond what this runtime allows at all are a mistake, not a wish to clamp
    if c.max_tokens > limits.max_tokens_ceiling {
        return invalid(format!(
            "constraints.max_tokens {} is above this runtime's ceiling of {}",
            c.max_tokens, limits.max_tokens_ceiling
        ));
    }
    if c.max_depth > limits.max_depth_ceiling {
        return invalid(format!(
            "constraints.max_depth {} is above this runtime's ceiling of {}",
            c.max_depth, limits.max_depth_ceiling
        ));
    }
    if c.deadline_ms > limits.max_deadline_ms {
        return invalid(format!(
            "constraints.deadline_ms {} is above this runtime's ceiling of {} ms",
            c.deadline_ms, limits.max_deadline_ms
        ));
    }
    if req.current_depth >= limits.max_depth_ceiling {
        return invalid(format!(
            "current_depth {} is beyond any depth this runtime allows ({})",
            req.current_depth, limits.max_depth_ceiling
        ));
    }
    if req.context_hints.len() > MAX_HINTS {
        return invalid(format!("context_hints has {} entries; at most {MAX_HINTS}", req.context_hints.len()));
    }
    if req.chain.len() > MAX_CHAIN {
        return invalid(format!("chain has {} links; at most {MAX_CHAIN}", req.chain.len()));
    }
    if req.chain.iter().any(|l| l.objective_hash.len() != 8 || !l.objective_hash.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return invalid("chain[].objective_hash must be 8 hex digits (the start of sha256(objective))".into());
    }
    if req.idempotency_key.as_ref().is_some_and(|k| k.is_empty() || k.len() > MAX_IDEMPOTENCY_KEY) {
        return invalid(format!("idempotency_key must be 1 to {MAX_IDEMPOTENCY_KEY} bytes"));
    }
    if req.origin_employee == req.target_employee {
        return invalid(format!(
            "origin_employee and target_employee are both '{}'; an agent does not delegate to itself",
            req.origin_employee
        ));
    }
    if req.parent_request_id.is_some() && req.root_request_id.is_none() {
        return invalid("parent_request_id is set but root_request_id is not; send both or neither".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AgentSlug, ErrorCode, UserId};

    fn req() -> DelegationRequest {
        DelegationRequest::new(
            AgentSlug::parse("prime-boss").unwrap(),
            AgentSlug::parse("byte-doc").unwrap(),
            UserId::parse("u").unwrap(),
            "Extract receipt data",
            "receipt text",
        )
    }

    #[test]
    fn a_sane_request_passes() {
        request(&req(), &Limits::default()).unwrap();
    }

    #[test]
    fn bad_fields_are_named() {
        let limits = Limits::default();
        type Mutation = Box<dyn Fn(&mut DelegationRequest)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (Box::new(|r| r.objective = "  ".into()), "objective is empty"),
            (Box::new(|r| r.constraints.max_tokens = 0), "max_tokens"),
            (Box::new(|r| r.constraints.deadline_ms = 0), "deadline_ms"),
            (Box::new(|r| r.input = "x".repeat(300_000)), "input is"),
            (Box::new(|r| r.target_employee = r.origin_employee.clone()), "does not delegate to itself"),
            (Box::new(|r| r.idempotency_key = Some(String::new())), "idempotency_key"),
            (Box::new(|r| r.constraints.max_tokens = u32::MAX), "ceiling of 200000"),
            (Box::new(|r| r.constraints.max_depth = 1000), "ceiling of 8"),
            (Box::new(|r| r.constraints.deadline_ms = u64::MAX), "ceiling of 300000 ms"),
            (Box::new(|r| r.current_depth = 8), "beyond any depth"),
        ];
        for (mutate, expected) in cases {
            let mut r = req();
            mutate(&mut r);
            let err = request(&r, &limits).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRequest);
            assert!(err.message.contains(expected), "{} !~ {expected}", err.message);
        }
        let mut r = req();
        r.protocol_version = "2.0".into();
        assert_eq!(request(&r, &limits).unwrap_err().code, ErrorCode::UnsupportedVersion);
    }
}
