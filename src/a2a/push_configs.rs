//! The push-notification config operations of [`A2aService`] (A2A 1.0:
//! Create/Get/List/DeleteTaskPushNotificationConfig), owner-checked like
//! tasks; the configs' checks, storage and deliveries are push.rs's.

use std::sync::atomic::Ordering;

use serde_json::Value;

use super::push::store_error;
use super::service::A2aService;
use crate::auth::Principal;
use crate::protocol::AgentSlug;
use crate::protocol::a2a::error::{A2aError, Kind};
use crate::protocol::a2a::types::{ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig};

/// The ids a config operation names: the task's and (except for list and create) the config's.
fn check_ids(task_id: &str, id: Option<&str>) -> Result<(), A2aError> {
    if task_id.is_empty() || task_id.len() > 256 {
        return Err(A2aError::invalid_params("taskId must be a task id of 1 to 256 characters"));
    }
    if id.is_some_and(|i| i.is_empty() || i.len() > 256) {
        return Err(A2aError::invalid_params("id must be a push notification config id of 1 to 256 characters"));
    }
    Ok(())
}

fn config_not_found(task_id: &str, id: &str) -> A2aError {
    let shown: String = id.chars().take(80).collect();
    A2aError::new(
        Kind::TaskNotFound,
        format!(
            "task '{task_id}' has no push notification config '{shown}'; list them with ListTaskPushNotificationConfigs"
        ),
    )
    .with("taskId", task_id)
    .with("id", shown)
}

impl A2aService {
    /// CreateTaskPushNotificationConfig: the config, checked (SSRF) and
    /// stored, for a task of the caller's; its deliveries start with the
    /// task's next event.
    pub async fn create_push_config(
        &self,
        principal: &Principal,
        agent: &AgentSlug,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let task_id = config.task_id.clone();
        check_ids(&task_id, None)?;
        self.get(principal, agent, &task_id, Some(0)).await?;
        let config = self.pusher().prepare(config).await?;
        let after = self.runtime().store().a2a_event_seq(&task_id).await.map_err(store_error)?;
        let saved = self.pusher().save(config, &task_id, after).await?;
        self.pushes(&task_id);
        Ok(saved)
    }

    /// GetTaskPushNotificationConfig.
    pub async fn get_push_config(
        &self,
        principal: &Principal,
        agent: &AgentSlug,
        task_id: &str,
        id: &str,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        check_ids(task_id, Some(id))?;
        self.get(principal, agent, task_id, Some(0)).await?;
        let configs = self.pusher().configs(task_id).await?;
        configs.into_iter().find(|c| c.id == id).ok_or_else(|| config_not_found(task_id, id))
    }

    /// ListTaskPushNotificationConfigs: the task's configs, oldest first,
    /// `page_size` (1 to 100, default all) at a time.
    pub async fn list_push_configs(
        &self,
        principal: &Principal,
        agent: &AgentSlug,
        task_id: &str,
        page_size: Option<i32>,
        page_token: Option<&str>,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
        check_ids(task_id, None)?;
        let size = match page_size {
            None | Some(0) => 100,
            Some(n) if (1..=100).contains(&n) => n as usize,
            Some(n) => return Err(A2aError::invalid_params(format!("pageSize {n} must be between 1 and 100"))),
        };
        let offset = match page_token.filter(|t| !t.is_empty()) {
            None => 0,
            Some(t) => t
                .strip_prefix("o")
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| A2aError::invalid_params("pageToken is not one this server gave out"))?,
        };
        self.get(principal, agent, task_id, Some(0)).await?;
        let all = self.pusher().configs(task_id).await?;
        let next = offset + size;
        Ok(ListTaskPushNotificationConfigsResponse {
            next_page_token: if next < all.len() { format!("o{next}") } else { String::new() },
            configs: all.into_iter().skip(offset).take(size).collect(),
        })
    }

    /// DeleteTaskPushNotificationConfig: idempotent (deleting a config that
    /// is gone is not an error); no event is sent to it afterwards.
    pub async fn delete_push_config(
        &self,
        principal: &Principal,
        agent: &AgentSlug,
        task_id: &str,
        id: &str,
    ) -> Result<(), A2aError> {
        check_ids(task_id, Some(id))?;
        self.get(principal, agent, task_id, Some(0)).await?;
        self.runtime().store().delete_a2a_push_config(task_id, id).await.map_err(store_error)?;
        Ok(())
    }

    /// The JWKS with the key that signs push notifications.
    pub fn push_jwks(&self) -> Value {
        self.pusher().key().jwks()
    }

    /// Push deliveries since the service started: (delivered, retried, failed).
    pub fn push_stats(&self) -> (u64, u64, u64) {
        let s = &self.pusher().stats;
        (s.delivered.load(Ordering::Relaxed), s.retried.load(Ordering::Relaxed), s.failed.load(Ordering::Relaxed))
    }
}
