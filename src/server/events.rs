//! `GET /v1/events`: live delegation events as Server-Sent Events
//! (`event: started|attempt|retry|finished`, `data: <json>`), optionally for
//! one tree (`?root_id=`). Each caller sees only its own: a user their
//! trees, an agent the delegations it took part in, an admin everything.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;

use super::{ApiError, AppState};
use crate::auth::Principal;
use crate::protocol::{IdError, RequestId};
use crate::telemetry::Event;

#[derive(Debug, Deserialize)]
pub(super) struct EventsQuery {
    #[serde(default)]
    root_id: Option<String>,
}

fn visible(principal: &Principal, e: &Event) -> bool {
    match principal {
        Principal::Admin => true,
        Principal::Agent(a) => e.involves(a.as_str()),
        p => p.user().is_some_and(|u| e.user_id() == u.as_str()),
    }
}

pub(super) async fn stream(
    State(state): State<Arc<AppState>>,
    principal: Principal,
    Query(q): Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let root: Option<RequestId> = q
        .root_id
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e: IdError| ApiError::invalid(format!("root_id: {e}")))?;
    let rx = state.runtime.subscribe();
    // the client going away drops the stream, and with it the subscription
    let stream = futures::stream::unfold((rx, principal, root), |(mut rx, principal, root)| async move {
        loop {
            let event = match rx.recv().await {
                Ok(e) if root.is_none_or(|r| r == e.root_id()) && visible(&principal, &e) => {
                    SseEvent::default().event(e.kind()).data(serde_json::to_string(&e).unwrap_or_default())
                }
                Ok(_) => continue,
                // a slow reader misses events rather than slowing the runtime
                Err(RecvError::Lagged(n)) => SseEvent::default().event("lagged").data(format!("{{\"missed\":{n}}}")),
                Err(RecvError::Closed) => return None,
            };
            return Some((Ok::<_, Infallible>(event), (rx, principal, root)));
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
