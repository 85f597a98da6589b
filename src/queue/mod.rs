//! `switchboard worker`: runs the delegations that `queue` agents publish
//! to NATS JetStream (`agent::queue`). Every worker serving an agent pulls
//! from the agent's one durable consumer, as many delegations at once as it
//! has free places, so the load is shared and a slow worker takes fewer. A delegation runs
//! through this worker's own runtime (its rails, its store, the agent's
//! real backend) under the lineage token it carries, with the
//! delegation's id as its idempotency key: a redelivery (a worker killed
//! mid-delegation, a missed acknowledgement) answers from the store instead
//! of running again. While it runs, the worker tells JetStream it is alive.
//!
//! Nothing unsigned, malformed or past its deadline runs: such a message is
//! acknowledged for good and copied to the dead-letter stream with its
//! reason (`sb.dead.<agent>`); so is a refusal of its lineage token, and
//! an answer that came after the caller's deadline (recorded, discarded by
//! the caller). See docs/SCALE.md.

pub(crate) mod replay;

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer::pull};
use futures::StreamExt;
use tokio::sync::Semaphore;

use crate::agent::queue::wire;
use crate::auth::Principal;
use crate::pipeline::{Door, Envelope};
use crate::protocol::{AgentSlug, DelegationResponse, ErrorCode};
use crate::runtime::Runtime;
use crate::store::now_ms;

/// How long one pull waits for a delegation before it asks again.
const PULL_WAIT: Duration = Duration::from_secs(5);

/// What a worker does and how much at once.
#[derive(Debug, Clone)]
pub(crate) struct WorkerOptions {
    /// The agents it serves (each must be in its configuration).
    pub agents: Vec<AgentSlug>,
    /// Delegations it runs at once, over all its agents (at least 1).
    pub concurrency: usize,
    /// The NATS server; None: `[queue] url`.
    pub url: Option<String>,
}

/// What a worker did, for its log and the tests.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Delegations run to an answer.
    pub ran: std::sync::atomic::AtomicU64,
    /// Messages dead-lettered.
    pub dead: std::sync::atomic::AtomicU64,
}

/// A worker connected to the queue, its consumers made: [`Worker::run`] serves.
pub(crate) struct Worker {
    runtime: Runtime,
    js: jetstream::Context,
    consumers: Vec<(AgentSlug, jetstream::consumer::Consumer<pull::Config>)>,
    places: Arc<Semaphore>,
    concurrency: usize,
    /// What it did so far.
    pub tally: Arc<Tally>,
}

impl Worker {
    /// Connects to `[queue] url`, makes the streams and each agent's
    /// consumer: a clear error when the server does not answer or an agent
    /// is not in the configuration.
    pub(crate) async fn connect(runtime: Runtime, options: &WorkerOptions) -> Result<Self, String> {
        if options.agents.is_empty() {
            return Err("--agents: name at least one agent this worker runs".into());
        }
        for agent in &options.agents {
            if runtime.registry().get(agent).is_none() {
                return Err(format!("--agents: no agent '{agent}' in this worker's configuration"));
            }
        }
        let mut cfg = runtime.config().queue.clone();
        if let Some(url) = &options.url {
            cfg.url.clone_from(url);
        }
        let js = jetstream::new(wire::connect(&cfg).await?);
        wire::streams(&js, &cfg).await?;
        let work = js.get_stream(wire::WORK_STREAM).await.map_err(|e| format!("{}: {e}", wire::WORK_STREAM))?;
        let mut consumers = Vec::new();
        for agent in &options.agents {
            let name = wire::consumer(agent);
            let config = pull::Config {
                durable_name: Some(name.clone()),
                filter_subject: wire::work(agent),
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                ack_wait: Duration::from_millis(cfg.ack_wait_ms),
                max_deliver: i64::from(cfg.max_deliver),
                ..Default::default()
            };
            let consumer = work
                .get_or_create_consumer(&name, config)
                .await
                .map_err(|e| format!("the consumer {name} cannot be made or opened: {e}"))?;
            consumers.push((agent.clone(), consumer));
        }
        Ok(Self {
            runtime,
            js,
            consumers,
            places: Arc::new(Semaphore::new(options.concurrency.max(1))),
            concurrency: options.concurrency.max(1),
            tally: Arc::default(),
        })
    }

    /// Serves until `stop` resolves; then waits for the delegations it runs.
    ///
    /// A worker is a replica like a server: it holds a lease, and takes over
    /// the trees of a worker (or server) on its database that died, so that
    /// a delegation handed out again after a worker was killed finds its
    /// first run finished rather than waiting on it.
    pub(crate) async fn run(self, stop: impl Future<Output = ()>) {
        let keeper = tokio::spawn(self.runtime.clone().keep_trees());
        let mut pullers = tokio::task::JoinSet::new();
        let this = Arc::new(self);
        for i in 0..this.consumers.len() {
            let this = this.clone();
            pullers.spawn(async move { this.pull(i).await });
        }
        stop.await;
        pullers.abort_all();
        // in flight: each holds a place until its answer is published and acknowledged
        let all = u32::try_from(this.concurrency).unwrap_or(u32::MAX);
        let _ = this.places.acquire_many(all).await;
        keeper.abort();
        this.runtime.release_lease().await;
    }

    /// Pulls for consumer `i`: as many delegations at once as this worker has
    /// free places (its share of them, when it serves several agents), so a
    /// busy or slow worker asks for fewer.
    async fn pull(self: Arc<Self>, i: usize) {
        let (agent, consumer) = &self.consumers[i];
        let share = self.concurrency.div_ceil(self.consumers.len()).max(1);
        loop {
            let Ok(first) = self.places.clone().acquire_owned().await else { return };
            let mut places = vec![first];
            while places.len() < share {
                match self.places.clone().try_acquire_owned() {
                    Ok(p) => places.push(p),
                    Err(_) => break,
                }
            }
            let batch = consumer.fetch().max_messages(places.len()).expires(PULL_WAIT).messages().await;
            let mut batch = match batch {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(%agent, "pull failed: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            // each message takes a place; the places left over are free again when the batch ends
            while let Some(next) = batch.next().await {
                match next {
                    Ok(message) => {
                        let Some(place) = places.pop() else { break };
                        let this = self.clone();
                        let agent = agent.clone();
                        tokio::spawn(async move {
                            this.handle(&agent, message).await;
                            drop(place);
                        });
                    }
                    Err(e) => {
                        tracing::warn!(%agent, "pull failed: {e}");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        break;
                    }
                }
            }
        }
    }

    /// Runs one delegation, or dead-letters it with the reason it was not run.
    async fn handle(&self, agent: &AgentSlug, message: jetstream::Message) {
        let delivered = message.info().map_or(1, |i| i.delivered);
        let job = match Job::read(agent, &message, delivered) {
            Ok(job) => job,
            Err(reason) => return self.dead(agent, &message, &reason).await,
        };
        let id = job.req.request_id;
        let origin = job.req.origin_employee.clone();
        // alive while it runs: JetStream hands it to nobody else
        let every = Duration::from_millis(self.runtime.config().queue.ack_wait_ms / 3);
        let caller = Principal::Agent(origin);
        let envelope = Envelope::new(job.req).lineage(Some(job.token));
        let running = self.runtime.enter(Door::Queue, &caller, envelope);
        let mut running = std::pin::pin!(running);
        let response = loop {
            tokio::select! {
                r = &mut running => break r,
                () = tokio::time::sleep(every) => { let _ = message.ack_with(AckKind::Progress).await; }
            }
        };
        if let Some(code) = response.error_code().filter(|c| refused_lineage(*c)) {
            let why = response.error.as_ref().map_or("", |e| e.message.as_str());
            let reason = format!("its lineage was refused ({code}): {why}; not run");
            self.dead(agent, &message, &reason).await;
            return self.reply(&message, id, &response).await;
        }
        if now_ms() > job.deadline_at {
            self.copy_dead(
                agent,
                &message,
                "late: the answer came after the caller's deadline; the caller discards it",
            )
            .await;
        }
        self.reply(&message, id, &response).await;
        self.tally.ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Publishes the answer on the delegation's reply subject, then acknowledges the delegation.
    async fn reply(&self, message: &jetstream::Message, id: crate::protocol::RequestId, response: &DelegationResponse) {
        let mut headers = async_nats::HeaderMap::new();
        let msg_id = header(message, wire::MSG_ID).unwrap_or_else(|| id.to_string());
        headers.insert(wire::MSG_ID, format!("reply-{msg_id}").as_str());
        let body = serde_json::to_vec(response).unwrap_or_default();
        // signed: the caller takes only its workers' answers (lineage::reply)
        match self.runtime.lineage().sign_reply(id, &body) {
            Ok(signature) => headers.insert(wire::SIGNATURE, signature.as_str()),
            Err(e) => {
                tracing::warn!(request_id = %id, "the answer goes unsigned, and a caller that trusts us ignores it: {e}");
            }
        }
        if let Err(e) = self.store(wire::reply(id), headers, body.into()).await {
            // not acknowledged: JetStream hands it out again, and the store answers for it
            return tracing::warn!(request_id = %id, "the answer was {e}");
        }
        if let Err(e) = message.double_ack().await {
            tracing::warn!(request_id = %id, "not acknowledged (it will be handed out again): {e}");
        }
    }

    /// Dead-letters `message` with `reason` and acknowledges it for good: it never runs.
    async fn dead(&self, agent: &AgentSlug, message: &jetstream::Message, reason: &str) {
        self.copy_dead(agent, message, reason).await;
        if let Err(e) = message.ack_with(AckKind::Term).await {
            tracing::warn!(%agent, "a dead letter was not acknowledged: {e}");
        }
    }

    /// Copies `message` to the dead-letter stream with `reason`.
    async fn copy_dead(&self, agent: &AgentSlug, message: &jetstream::Message, reason: &str) {
        tracing::warn!(%agent, subject = %message.subject, "dead letter: {reason}");
        let mut headers = message.headers.clone().unwrap_or_default();
        // a dead letter is its own message: not a duplicate of the work it copies
        headers.insert(wire::MSG_ID, uuid::Uuid::new_v4().to_string().as_str());
        headers.insert(wire::REASON, reason);
        if let Err(e) = self.store(wire::dead(agent.as_str()), headers, message.payload.clone()).await {
            tracing::warn!(%agent, "a dead letter was {e}");
        }
        self.tally.dead.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Publishes to a stream's subject and waits for the stream to store it;
    /// what went wrong, as "not published: …" or "not stored: …".
    async fn store(
        &self,
        subject: String,
        headers: async_nats::HeaderMap,
        payload: bytes::Bytes,
    ) -> Result<(), String> {
        let stored = self.js.publish_with_headers(subject, headers, payload).await;
        stored.map_err(|e| format!("not published: {e}"))?.await.map(drop).map_err(|e| format!("not stored: {e}"))
    }
}

/// The value of header `name` of `message`, if it has one.
fn header(message: &async_nats::Message, name: &str) -> Option<String> {
    message.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str().to_string())
}

/// Whether `code` is a refusal of the delegation's signed lineage.
fn refused_lineage(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::LineageInvalid | ErrorCode::LineageMismatch | ErrorCode::Unauthenticated)
}

/// A delegation as a worker takes it from the queue.
struct Job {
    req: crate::protocol::DelegationRequest,
    token: String,
    deadline_at: i64,
}

impl Job {
    /// The delegation in `message` on `agent`'s subject, or why it must not run.
    fn read(agent: &AgentSlug, message: &async_nats::Message, delivered: i64) -> Result<Self, String> {
        let token = header(message, wire::LINEAGE)
            .filter(|t| !t.trim().is_empty())
            .ok_or("unsigned: no lineage token (a worker runs only signed delegations)")?;
        let deadline_at = header(message, wire::DEADLINE_AT)
            .ok_or("no deadline header")?
            .parse::<i64>()
            .map_err(|_| "the deadline header is not a number of milliseconds")?;
        let left = deadline_at.saturating_sub(now_ms());
        if left <= 0 {
            return Err(if delivered > 1 {
                format!(
                    "expired: the caller's deadline passed; not run now (handed out {delivered} times: \
                     an earlier worker may have run it and not answered in time)"
                )
            } else {
                "expired: the caller's deadline passed before a worker took it; not run".into()
            });
        }
        let mut req = crate::protocol::parse_request(&message.payload)
            .map_err(|e| format!("malformed envelope ({}): {}", e.code, e.message))?;
        if &req.target_employee != agent {
            return Err(format!("the envelope is for '{}' but came on {}'s subject", req.target_employee, agent));
        }
        req.constraints.deadline_ms = req.constraints.deadline_ms.min(u64::try_from(left).unwrap_or(0));
        Ok(Self { req, token, deadline_at })
    }
}
