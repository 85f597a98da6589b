//! Idempotency: the first request with a key runs; a repeat gets the stored
//! response without running the agent again (waiting while the first still
//! runs, within its own deadline); the same key with other parameters is
//! refused. A finished answer is kept for repeats; a failure frees the key.

use std::time::Duration;

use tokio::time::Instant;

use super::Runtime;
use super::admit::Admitted;
use crate::protocol::{DelegationError, DelegationRequest, DelegationResponse, ErrorCode, Status};
use crate::store::Claim;

/// How often a repeated request looks whether the first one finished.
const POLL: Duration = Duration::from_millis(25);

/// `Some(response)` when this is a repeat of a finished request; `None` when it should run.
pub(super) async fn claim(rt: &Runtime, adm: &Admitted) -> Result<Option<DelegationResponse>, DelegationError> {
    let Some(key) = &adm.req.idempotency_key else { return Ok(None) };
    let store = &rt.inner.store;
    let fingerprint = adm.req.fingerprint();
    loop {
        match store.claim_idempotency(&adm.req.user_id, key, &fingerprint).await? {
            Claim::New => return Ok(None),
            Claim::Done(json) => {
                return serde_json::from_str(&json).map(Some).map_err(|e| {
                    DelegationError::new(ErrorCode::AgentUnavailable, format!("stored response is unreadable: {e}"))
                });
            }
            Claim::Mismatch => {
                return Err(DelegationError::invalid(format!(
                    "idempotency_key '{key}' was already used with different parameters; use a new key for a new request"
                )));
            }
            _ => {
                if Instant::now() + POLL >= adm.node.deadline {
                    return Err(DelegationError::new(
                        ErrorCode::DeadlineExceeded,
                        format!("a request with idempotency_key '{key}' is still running; retry later"),
                    ));
                }
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

/// Keeps a finished answer for repeats of its key, or frees the key after a failure.
pub(super) async fn keep(rt: &Runtime, req: &DelegationRequest, response: &DelegationResponse) {
    let Some(key) = &req.idempotency_key else { return };
    let store = &rt.inner.store;
    let kept = match response.status {
        Status::Failed => store.release_idempotency(&req.user_id, key).await,
        _ => match serde_json::to_string(response) {
            Ok(json) => store.complete_idempotency(&req.user_id, key, &json).await,
            Err(_) => store.release_idempotency(&req.user_id, key).await,
        },
    };
    if let Err(e) = kept {
        tracing::warn!(request_id = %req.request_id, "idempotency record not written: {e}");
    }
}
