//! The scripted team of the durable-tree tests (`durable`, `approvals_http`,
//! `replay_http`, `approvals_ui`): a boss that asks `first`, then `second`
//! (when the configuration has it), then the `mailer` when its objective
//! says "mail", and answers what they said joined by ` + ` (a refused mail
//! as `mail: CODE`); the mailer sends only once a person approves
//! `send_email`; `second` can hang (the process "dies" there). What each
//! did is counted across every runtime of a test.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use switchboard::agent::Call;
use switchboard::config::Config;
use switchboard::protocol::RequestId;
use switchboard::store::Store;
use switchboard::{AgentOutput, AskOptions, Runtime};
use tokio::sync::Notify;

use crate::db::Db;
use crate::support::{agent, slug, user};

/// Bearer tokens of the served team (see [`served_config`]).
pub(crate) const ALICE: &str = "team-alice-token";
pub(crate) const BOB: &str = "team-bob-token";
pub(crate) const ADMIN: &str = "team-admin-token";
pub(crate) const GATEWAY: &str = "team-gateway-token";

/// The team as a server runs it: Prime is the boss; alice and bob are
/// users, an admin, and a `gateway` service that may start trees; the boss
/// asks `boss_asks` (of first, second and mailer, which sends only once a
/// person approves `send_email`).
pub(crate) fn served_config(boss_asks: &[&str]) -> String {
    let mut toml = format!(
        "[limits]\ndeadline_ms = 30000\n\n[prime]\nagent = \"boss\"\n\n[auth]\n\
         admin_tokens = [\"{ADMIN}\"]\nuser_tokens = {{ \"alice\" = \"{ALICE}\", \"bob\" = \"{BOB}\" }}\n\
         service_tokens = {{ \"gateway\" = \"{GATEWAY}\" }}\nservice_roots = {{ \"gateway\" = [\"*\"] }}\n\n\
         [[agents]]\nslug = \"gateway\"\nname = \"Gateway\"\nmay_delegate_to = [\"boss\"]\n\n\
         [[agents]]\nslug = \"boss\"\nname = \"Boss\"\nmay_delegate_to = {boss_asks:?}\n"
    );
    for helper in boss_asks {
        toml.push_str(&format!("\n[[agents]]\nslug = \"{helper}\"\nname = \"{helper}\"\n"));
        if *helper == "mailer" {
            toml.push_str("requires_approval = [\"send_email\"]\n");
        }
    }
    toml
}

/// What the agents did, across every runtime of a test.
#[derive(Default)]
pub(crate) struct Runs {
    pub(crate) first: AtomicUsize,
    pub(crate) second: AtomicUsize,
    pub(crate) sent: AtomicUsize,
    pub(crate) second_started: Notify,
    /// What "now" was for second when it last ran (epoch ms).
    pub(crate) second_now: std::sync::Mutex<Option<i64>>,
}

/// The team on `db` under `config` (its `[[agents]]` name which of gateway,
/// boss, first, second and mailer take part).
pub(crate) fn runtime(db: &Db, config: &str, runs: &Arc<Runs>, second_hangs: bool) -> Runtime {
    runtime_on(db.dyn_store(), config, runs, second_hangs)
}

/// [`runtime`] on a store of its own: a replica, when it is a second
/// connection to the same database.
pub(crate) fn runtime_on(store: Arc<dyn Store>, config: &str, runs: &Arc<Runs>, second_hangs: bool) -> Runtime {
    let config = Config::from_toml(config).unwrap();
    let has = |slug: &str| config.agent(slug).is_some();
    let helpers: Vec<&'static str> = ["first", "second"].into_iter().filter(|s| has(s)).collect();
    let mails = has("mailer");
    let (present, mut b) = (config.clone(), Runtime::builder().config(config).store(store));
    b = b.agent(
        "boss",
        agent(move |ctx, task| {
            let helpers = helpers.clone();
            async move {
                let d = ctx.delegator()?;
                let mut parts = Vec::new();
                for (to, step) in helpers.into_iter().zip(["step one", "step two"]) {
                    parts.push(d.delegate(Call::new(slug(to), step)).await.result);
                }
                if mails && task.objective.contains("mail") {
                    let sent = d.delegate(Call::new(slug("mailer"), "Mail the report to alex@example.com")).await;
                    parts.push(match sent.error {
                        Some(e) => format!("mail: {}", e.code),
                        None => sent.result,
                    });
                }
                Ok(AgentOutput::new("done", parts.join(" + ")))
            }
        }),
    );
    if present.agent("gateway").is_some() {
        b = b.agent("gateway", agent(|_ctx, _task| async { Ok(AgentOutput::new("ok", "ok")) }));
    }
    let r = runs.clone();
    b = b.agent(
        "first",
        agent(move |_ctx, _task| {
            let runs = r.clone();
            async move {
                runs.first.fetch_add(1, Ordering::SeqCst);
                Ok(AgentOutput::new("one", "one"))
            }
        }),
    );
    if present.agent("second").is_some() {
        let r = runs.clone();
        b = b.agent(
            "second",
            agent(move |ctx, _task| {
                let runs = r.clone();
                async move {
                    *runs.second_now.lock().unwrap() = Some(ctx.now().timestamp_millis());
                    runs.second_started.notify_waiters();
                    if second_hangs {
                        std::future::pending::<()>().await;
                    }
                    runs.second.fetch_add(1, Ordering::SeqCst);
                    Ok(AgentOutput::new("two", "two"))
                }
            }),
        );
    }
    if mails {
        let r = runs.clone();
        b = b.agent(
            "mailer",
            agent(move |ctx, task| {
                let runs = r.clone();
                async move {
                    ctx.approve("send_email", &task.objective).await?;
                    runs.sent.fetch_add(1, Ordering::SeqCst);
                    Ok(AgentOutput::new("sent", "sent"))
                }
            }),
        );
    }
    b.build().unwrap()
}

/// A turn of alice's to the boss under the root id `id`.
pub(crate) fn to_boss(id: RequestId) -> AskOptions {
    AskOptions { agent: Some(slug("boss")), request_id: Some(id), ..Default::default() }
}

/// Starts a tree (alice's `message` to the boss) on a runtime whose second
/// agent hangs, and "kills" the runtime once second runs: the task is
/// aborted and the runtime dropped, its lease given up first (so that every
/// other runtime counts it dead at once, not only once the tasks it left
/// behind, such as the write of the cancelled step's record, let it go).
/// The tree's steps stay open in the store.
pub(crate) async fn cut_off_mid_tree(db: &Db, config: &str, runs: &Arc<Runs>, message: &str) -> RequestId {
    let rt = runtime(db, config, runs, true);
    let root = RequestId::new();
    let started = runs.second_started.notified();
    let message = message.to_string();
    let dying = rt.clone();
    let task = tokio::spawn(async move { rt.ask(&user("alice"), &message, to_boss(root)).await });
    tokio::time::timeout(Duration::from_secs(10), started).await.expect("second started");
    dying.release_lease().await;
    task.abort();
    let _ = task.await;
    root
}
