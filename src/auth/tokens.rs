//! Bearer tokens: service tokens name an agent (the service role,
//! not user tokens), user tokens name a user, admin tokens are for operators
//! and the web page. Only sha256 hashes are stored; a token is shown once,
//! when it is issued.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use sha2::{Digest, Sha256};

use super::Principal;
use crate::config::AuthConfig;
use crate::protocol::{AgentSlug, DelegationError, ErrorCode, UserId};
use crate::store::Store;

/// sha256 hex of a token.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new token: a kind prefix and 244 bits from the OS's random source.
pub fn new_token(principal: &Principal) -> String {
    let prefix = match principal {
        Principal::Agent(_) => "sbs",
        Principal::User(_) => "sbu",
        Principal::Admin | Principal::Anonymous(_) => "sba",
    };
    let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    format!("{prefix}_{}{}", a.simple(), b.simple())
}

fn unauthenticated(msg: &str) -> DelegationError {
    DelegationError::new(ErrorCode::Unauthenticated, msg)
}

/// Looks tokens up, remembering the answers.
pub struct Tokens {
    store: Arc<dyn Store>,
    cache: RwLock<HashMap<String, Principal>>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens").finish_non_exhaustive()
    }
}

impl Tokens {
    /// A token table over `store`, with an empty cache.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store, cache: RwLock::new(HashMap::new()) }
    }

    /// Records the configured tokens (raw or `sha256:<hex>`).
    pub async fn load_config(&self, auth: &AuthConfig) -> Result<(), DelegationError> {
        let hashed = |t: &str| t.strip_prefix("sha256:").map_or_else(|| hash_token(t), str::to_string);
        for (agent, token) in &auth.service_tokens {
            let p = Principal::Agent(AgentSlug::parse(agent.as_str()).map_err(|e| DelegationError::invalid(e.0))?);
            self.remember(&hashed(token), p).await?;
        }
        for (user, token) in &auth.user_tokens {
            let p = Principal::User(UserId::parse(user.as_str()).map_err(|e| DelegationError::invalid(e.0))?);
            self.remember(&hashed(token), p).await?;
        }
        for token in &auth.admin_tokens {
            self.remember(&hashed(token), Principal::Admin).await?;
        }
        Ok(())
    }

    async fn remember(&self, hash: &str, p: Principal) -> Result<(), DelegationError> {
        self.store.put_token(hash, p.kind(), &p.subject()).await?;
        self.cache.write().unwrap_or_else(|e| e.into_inner()).insert(hash.to_string(), p);
        Ok(())
    }

    /// Issues a new token for `principal`; the caller shows it once.
    pub async fn issue(&self, principal: Principal) -> Result<String, DelegationError> {
        let token = new_token(&principal);
        self.remember(&hash_token(&token), principal).await?;
        Ok(token)
    }

    /// Whom a presented token belongs to. Unknown tokens are `UNAUTHENTICATED`.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, DelegationError> {
        if token.is_empty() || token.len() > 512 {
            return Err(unauthenticated("the bearer token is empty or too long"));
        }
        let hash = hash_token(token);
        if let Some(p) = self.cache.read().unwrap_or_else(|e| e.into_inner()).get(&hash) {
            return Ok(p.clone());
        }
        // issued by another process since we started
        let found = self.store.find_token(&hash).await?;
        let p = found
            .and_then(|(kind, subject)| Principal::from_parts(&kind, &subject))
            .ok_or_else(|| unauthenticated("the bearer token is not valid for this Switchboard"))?;
        self.cache.write().unwrap_or_else(|e| e.into_inner()).insert(hash, p.clone());
        Ok(p)
    }

    /// First start: a token for every agent without one, one user token and
    /// one admin token when there are none. Returns what was issued, to show once.
    pub async fn bootstrap<'a>(
        &self,
        agents: impl IntoIterator<Item = &'a AgentSlug>,
    ) -> Result<Vec<(Principal, String)>, DelegationError> {
        let mut issued = Vec::new();
        let have: Vec<String> = self.store.token_subjects("service").await?;
        for agent in agents {
            if !have.iter().any(|h| h == agent.as_str()) {
                let p = Principal::Agent(agent.clone());
                issued.push((p.clone(), self.issue(p).await?));
            }
        }
        if self.store.token_subjects("user").await?.is_empty() {
            let p = Principal::User(UserId::parse("local-user").map_err(|e| DelegationError::invalid(e.0))?);
            issued.push((p.clone(), self.issue(p).await?));
        }
        if self.store.token_subjects("admin").await?.is_empty() {
            issued.push((Principal::Admin, self.issue(Principal::Admin).await?));
        }
        Ok(issued)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[tokio::test]
    async fn issued_tokens_authenticate_and_are_stored_hashed() {
        let store = Arc::new(MemoryStore::new());
        let tokens = Tokens::new(store.clone());
        let prime = Principal::Agent(AgentSlug::parse("prime-boss").unwrap());
        let t = tokens.issue(prime.clone()).await.unwrap();
        assert!(t.starts_with("sbs_") && t.len() == 68);
        assert_eq!(tokens.authenticate(&t).await.unwrap(), prime);
        assert_eq!(store.find_token(&t).await.unwrap(), None, "the raw token is never stored");
        // a second process (fresh cache, same store) accepts it too
        assert_eq!(Tokens::new(store).authenticate(&t).await.unwrap(), prime);
        let err = tokens.authenticate("sbs_forged").await.unwrap_err();
        assert_eq!(err.code, ErrorCode::Unauthenticated);
    }

    #[tokio::test]
    async fn configured_tokens_may_be_given_as_hashes_and_bootstrap_fills_the_gaps() {
        let tokens = Tokens::new(Arc::new(MemoryStore::new()));
        let auth = AuthConfig {
            service_tokens: [("prime-boss".to_string(), "secret-1".to_string())].into(),
            user_tokens: [("alice".to_string(), format!("sha256:{}", hash_token("secret-2")))].into(),
            admin_tokens: vec![],
            service_roots: None,
        };
        tokens.load_config(&auth).await.unwrap();
        assert_eq!(tokens.authenticate("secret-2").await.unwrap(), Principal::User(UserId::parse("alice").unwrap()));
        let agents = [AgentSlug::parse("prime-boss").unwrap(), AgentSlug::parse("byte-doc").unwrap()];
        let issued = tokens.bootstrap(&agents).await.unwrap();
        let kinds: Vec<String> = issued.iter().map(|(p, _)| format!("{}:{}", p.kind(), p.subject())).collect();
        assert_eq!(kinds, ["service:byte-doc", "admin:admin"], "alice already has a user token");
        assert!(tokens.bootstrap(&agents).await.unwrap().is_empty(), "only at first start");
    }
}
