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
        // a paused tree keeps its key: it finishes (and keeps its answer) when resumed
        Status::NeedsApproval => return,
        // the same key sent again after the user answered runs again
        Status::Failed | Status::NeedsInput => store.release_idempotency(&req.user_id, key).await,
        _ => match serde_json::to_string(response) {
            Ok(json) => store.complete_idempotency(&req.user_id, key, &json).await,
            Err(_) => store.release_idempotency(&req.user_id, key).await,
        },
    };
    if let Err(e) = kept {
        tracing::warn!(request_id = %req.request_id, "idempotency record not written: {e}");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use crate::pipeline::testing::{Flaky, request, runtime, send};
    use crate::protocol::{ErrorCode, Status};

    #[tokio::test(start_paused = true)]
    async fn a_repeated_key_gets_the_stored_answer_without_running_again() {
        let (worker, runs) = Flaky::new(0, ErrorCode::AgentFailed);
        let rt = runtime(worker);
        let mut req = request("boss", "worker", "Say it", "hi");
        req.idempotency_key = Some("k-1".into());
        let first = send(&rt, req.clone()).await;
        req.request_id = Default::default();
        let again = send(&rt, req.clone()).await;
        assert_eq!(first.status, Status::Success);
        assert_eq!((again.request_id, again.result.as_str()), (first.request_id, first.result.as_str()));
        assert_eq!(runs.load(Ordering::SeqCst), 1);

        req.objective = "Say something else".into();
        let other = send(&rt, req).await;
        assert_eq!(other.error_code(), Some(ErrorCode::InvalidRequest));
        assert!(other.error.unwrap().message.contains("different parameters"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_frees_its_key_for_the_next_try() {
        let (worker, runs) = Flaky::new(3, ErrorCode::AgentFailed);
        let rt = runtime(worker);
        let mut req = request("boss", "worker", "Say it", "hi");
        req.idempotency_key = Some("k-2".into());
        assert_eq!(send(&rt, req.clone()).await.status, Status::Failed);
        req.request_id = Default::default();
        assert_eq!(send(&rt, req).await.status, Status::Success);
        assert_eq!(runs.load(Ordering::SeqCst), 4);
    }
}
