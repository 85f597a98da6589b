//! A2A streams as Server-Sent Events: the task as it was, then (for a
//! client that reconnects with `Last-Event-ID`) the stored events it
//! missed, then its live events, one `data:` line each, until the turn
//! ends. Each event but the first snapshot carries its number in the task
//! as its SSE `id:`, which a client sends back as `Last-Event-ID`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::a2a::{KEEP_ALIVE, Subscription, TaskEvent, ends_stream};
use crate::protocol::a2a::types::StreamResponse;
use crate::protocol::a2a::{A2aError, Kind};
use crate::store::{MAX_EVENTS_PER_TASK, Store};

/// The `Last-Event-ID` a reconnecting client sent: the `id:` of the last
/// event it received (None without the header, or with an empty one).
pub(super) fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, A2aError> {
    let Some(value) = headers.get("last-event-id") else { return Ok(None) };
    let text = value.to_str().unwrap_or("\u{fffd}").trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<u64>().map(Some).map_err(|_| {
        let shown: String = text.chars().take(40).collect();
        A2aError::new(
            Kind::InvalidParams,
            format!(
                "Last-Event-ID '{shown}' is not an event id of this server: send the number in the `id:` line of \
                 the last event received (such as 12), or no Last-Event-ID to start from the task as it is now"
            ),
        )
    })
}

/// Where a stream stands.
struct Cursor {
    first: Option<StreamResponse>,
    replay: VecDeque<TaskEvent>,
    live: broadcast::Receiver<TaskEvent>,
    /// The number of the last event sent (or covered by the snapshot).
    last: u64,
    /// The newest event's number when the stream began.
    latest: u64,
    done: bool,
    store: Arc<dyn Store>,
    keeper: crate::store::TaskKeeper,
    task_id: String,
}

/// A stream of A2A responses as Server-Sent Events, one `data:` line each:
/// for JSON-RPC (`id` set) each wrapped as a JSON-RPC response. The stream
/// closes after the event that ends the turn (terminal or interrupted
/// state); a subscription's first snapshot closes it only when terminal, a
/// replayed event only when it is the newest one.
pub(super) fn sse(sub: Subscription, id: Option<Value>, subscription: bool) -> Response {
    let frame = move |(seq, ev): (Option<u64>, StreamResponse)| -> Result<SseEvent, Infallible> {
        let body = match &id {
            Some(id) => json!({"jsonrpc": "2.0", "id": id, "result": ev}),
            None => serde_json::to_value(&ev).unwrap_or_default(),
        };
        let event = SseEvent::default().data(body.to_string());
        Ok(match seq {
            Some(n) => event.id(n.to_string()),
            None => event,
        })
    };
    sse_response(events(sub, subscription).map(frame))
}

/// The responses of a stream, each with its event number (None for the
/// first snapshot), ending as [`sse`] describes; the gRPC binding sends
/// the same sequence as messages.
pub(super) fn events(
    sub: Subscription,
    subscription: bool,
) -> impl Stream<Item = (Option<u64>, StreamResponse)> + Send {
    let state = sub.task.status.state;
    let done = state.is_terminal() || (!subscription && state.ends_turn());
    let cursor = Cursor {
        task_id: sub.task.id.clone(),
        store: sub.store,
        keeper: sub.keeper,
        first: Some(StreamResponse::Task(sub.task)),
        replay: sub.replay.into(),
        live: sub.live,
        last: sub.after,
        latest: sub.latest,
        done,
    };
    futures::stream::unfold(cursor, move |mut c| {
        async move {
            if let Some(f) = c.first.take() {
                return Some(((None, f), c));
            }
            if c.done {
                return None;
            }
            while let Some(ev) = c.replay.pop_front() {
                // (a refill after a lag may hold what the live channel sends next: skipped there by seq)
                if ev.seq <= c.last {
                    continue;
                }
                c.last = ev.seq;
                c.done = ends_stream(&ev.event) && ev.seq >= c.latest && c.replay.is_empty();
                return Some(((Some(ev.seq), ev.event), c));
            }
            loop {
                match c.live.recv().await {
                    Ok(ev) if ev.seq <= c.last => continue,
                    Ok(ev) => {
                        c.last = ev.seq;
                        c.done = ends_stream(&ev.event);
                        return Some(((Some(ev.seq), ev.event), c));
                    }
                    // a reader too slow for the buffer: what it missed is on file (stored before sent)
                    Err(RecvError::Lagged(_)) => {
                        let after = i64::try_from(c.last).unwrap_or(i64::MAX);
                        let Ok(missed) = c.store.a2a_events(&c.task_id, after, MAX_EVENTS_PER_TASK as usize).await
                        else {
                            return None; // the client reconnects with Last-Event-ID
                        };
                        // kept redacted: the task's vault as stored now reads every stored event
                        let vault = match c.store.a2a_task(&c.task_id).await {
                            Ok(Some(t)) => c.keeper.vault_of(&t),
                            _ => Default::default(),
                        };
                        let missed = c.keeper.open_events(missed, &vault);
                        for r in missed {
                            let Ok(event) = r.to_event() else { return None };
                            c.replay.push_back(TaskEvent { seq: u64::try_from(r.seq).unwrap_or(0), event });
                        }
                        c.latest = c.replay.back().map_or(c.latest, |e| e.seq);
                        if let Some(ev) = c.replay.pop_front().filter(|e| e.seq > c.last) {
                            c.last = ev.seq;
                            c.done = ends_stream(&ev.event) && c.replay.is_empty();
                            return Some(((Some(ev.seq), ev.event), c));
                        }
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        }
    })
}

fn sse_response(stream: impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static) -> Response {
    let mut res = Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::a2a::types::{Task, TaskState, TaskStatus, TaskStatusUpdateEvent};
    use crate::store::{A2aEventRecord, MemoryStore};

    fn status(state: TaskState) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus::now(state, None),
            metadata: None,
        })
    }

    fn ids(body: &[u8]) -> Vec<u64> {
        String::from_utf8_lossy(body)
            .lines()
            .filter_map(|l| l.strip_prefix("id:"))
            .map(|n| n.trim().parse().unwrap())
            .collect()
    }

    #[test]
    fn last_event_id_is_a_number_or_absent() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("last-event-id", HeaderValue::from_str(v).unwrap());
            last_event_id(&h)
        };
        assert_eq!(last_event_id(&HeaderMap::new()).unwrap(), None);
        assert_eq!(with("").unwrap(), None);
        assert_eq!(with(" 12 ").unwrap(), Some(12));
        for bad in ["x", "-1", "1e3", "18446744073709551616"] {
            let e = with(bad).unwrap_err();
            assert_eq!(e.kind, Kind::InvalidParams, "{bad}");
            assert!(e.message.contains("Last-Event-ID"), "{}", e.message);
        }
        let mut h = HeaderMap::new();
        h.insert("last-event-id", HeaderValue::from_bytes(b"\xff\xfe").unwrap());
        assert_eq!(last_event_id(&h).unwrap_err().kind, Kind::InvalidParams, "not even text");
    }

    #[tokio::test]
    async fn a_reader_behind_the_live_buffer_gets_what_it_missed_from_the_store_once_each() {
        let store = Arc::new(MemoryStore::new());
        let events: Vec<TaskEvent> = (1..=6)
            .map(|n| TaskEvent {
                seq: n,
                event: status(if n == 6 { TaskState::Completed } else { TaskState::Working }),
            })
            .collect();
        let records: Vec<A2aEventRecord> =
            events.iter().map(|e| A2aEventRecord::new("t1", e.seq as i64, &e.event)).collect();
        let records = crate::redact::Redactor::default().redacted(records, &mut Default::default());
        store.append_a2a_events(&records).await.unwrap();
        let (tx, live) = broadcast::channel(2);
        for e in &events {
            let _ = tx.send(e.clone()); // two slots: the reader lags behind
        }
        drop(tx);
        let task = Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus::now(TaskState::Working, None),
            artifacts: None,
            history: None,
            metadata: None,
        };
        let keeper = crate::store::TaskKeeper::new(crate::redact::SealKey::random());
        let sub = Subscription { task, replay: Vec::new(), live, after: 0, latest: 0, store, keeper };
        let body = axum::body::to_bytes(sse(sub, None, true).into_body(), 1 << 20).await.unwrap();
        assert_eq!(ids(&body), [1, 2, 3, 4, 5, 6], "{}", String::from_utf8_lossy(&body));
        assert!(String::from_utf8_lossy(&body).contains("TASK_STATE_COMPLETED"));
    }
}
