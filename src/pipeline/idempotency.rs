//! Idempotency: the first request with a key runs; a repeat gets the stored
//! response without running the agent again (waiting while the first still
//! runs, within its own deadline); the same key with other parameters is
//! refused. A finished answer is kept for repeats; a failure frees the key.
//! A key whose holder died before anyone can finish it (no tree step to
//! take over, see [`abandoned`]) is taken over by the next request with it
//! instead of holding every repeat off for ever.

use std::time::Duration;

use tokio::time::Instant;

use super::admit::Admitted;
use crate::protocol::{DelegationError, DelegationRequest, DelegationResponse, ErrorCode, Status};
use crate::runtime::{Census, Runtime};
use crate::store::{Claim, Held, Holder, KeyAnswer, StepState};
use crate::telemetry::TakenOver;

/// How often a repeated request looks whether the first one finished.
const POLL: Duration = Duration::from_millis(25);

/// Every how many polls a waiting request looks whether the key's holder still lives.
const LOOK_EVERY: u32 = 8;

/// `Some(response)` when this is a repeat of a finished request; `None` when it should run.
pub(super) async fn claim(rt: &Runtime, adm: &Admitted) -> Result<Option<DelegationResponse>, DelegationError> {
    let Some(key) = &adm.req.idempotency_key else { return Ok(None) };
    let (store, user) = (&rt.inner.store, &adm.req.user_id);
    let fingerprint = adm.req.fingerprint();
    let me = Holder { request_id: adm.req.request_id, owner: rt.replica_id().to_string() };
    let mut polls = 0u32;
    loop {
        let held = match store.claim_idempotency(user, key, &fingerprint, &me).await? {
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
            Claim::Pending(held) => held,
        };
        if polls.is_multiple_of(LOOK_EVERY)
            && abandoned(rt, &held).await
            && store.take_idempotency(user, key, &held, &me).await?
        {
            rt.inner.metrics.taken_over(TakenOver::IdempotencyKey, 1);
            tracing::warn!(
                request_id = %adm.req.request_id, key = %key, holder = ?held,
                "idempotency key taken over: the request holding it died and left no tree to finish it"
            );
            return Ok(None);
        }
        polls += 1;
        if Instant::now() + POLL >= adm.node.deadline {
            return Err(DelegationError::new(
                ErrorCode::DeadlineExceeded,
                format!("a request with idempotency_key '{key}' is still running; retry later"),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether nobody will finish the request holding a key. A holder whose
/// tree step is open is finished by whichever replica takes its tree over
/// (and keeps the answer under the key), so that is waited for. A holder
/// with no step died between claiming the key and writing its step (or was
/// refused there): abandoned once its replica is gone. A holder whose step
/// failed or was cancelled frees the key itself: abandoned once the replica
/// that ended the step is gone without having freed it. A read that fails
/// says no: waiting is always safe.
async fn abandoned(rt: &Runtime, held: &Held) -> bool {
    let step = match held.request_id {
        Some(id) => match rt.inner.store.step(id).await {
            Ok(step) => step,
            Err(_) => return false,
        },
        None => None,
    };
    let (owner, written_at) = match &step {
        None => (held.owner.as_deref(), held.since),
        Some(s) if matches!(s.state, StepState::Failed | StepState::Cancelled) => (s.owner.as_deref(), s.updated_at),
        Some(_) => return false,
    };
    Census::take(rt).await.is_ok_and(|census| census.gone(owner, written_at))
}

/// Frees the key a request claimed and then did not run.
pub(super) async fn free(rt: &Runtime, req: &DelegationRequest) {
    let Some(key) = &req.idempotency_key else { return };
    if let Err(e) = rt.inner.store.release_idempotency(&req.user_id, key).await {
        tracing::warn!(request_id = %req.request_id, "idempotency key not freed: {e}");
    }
}

/// What a finished request leaves under its key, written with its record:
/// its answer kept for repeats, or the key freed after a failure (or a
/// question for the user: the same key sent again after the answer runs
/// again). A paused tree keeps its key held: it finishes (and keeps its
/// answer) when resumed. `written` is the answer as its step keeps it
/// (`journal::ended`): the same document, not written a second time.
pub(super) fn answer(
    req: &DelegationRequest,
    response: &DelegationResponse,
    written: Option<&str>,
) -> Option<KeyAnswer> {
    let key = req.idempotency_key.as_ref()?;
    let response = match response.status {
        Status::NeedsApproval => return None,
        Status::Failed | Status::NeedsInput => None,
        _ => written.map(str::to_string),
    };
    Some(KeyAnswer { user_id: req.user_id.clone(), key: key.clone(), response })
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
