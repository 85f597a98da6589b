//! Agent cards: every registered agent described as an A2A agent (its
//! interfaces, skills from its capabilities, the bearer scheme and the rails
//! extension).

use serde_json::{Map, json};

use crate::auth::Principal;
use crate::config::{AgentSpec, Limits};
use crate::protocol::a2a::types::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill, PROTOCOL_VERSION,
};
use crate::protocol::a2a::{LINEAGE_EXTENSION, RAILS_EXTENSION};

/// The extension that describes how push notifications are signed (its
/// params: `jwksUri`, `header`, `alg`).
pub(super) const PUSH_SIGNATURE_EXTENSION: &str = "https://switchboard.dev/a2a/ext/push-signature/v1";

/// The card of `spec`, served at `base` (the service's URL as the caller reached it).
pub(crate) fn agent_card(spec: &AgentSpec, base: &str, anonymous: bool) -> AgentCard {
    let url = format!("{base}/a2a/{}", spec.slug);
    let interface = |binding: &str| AgentInterface {
        url: url.clone(),
        protocol_binding: binding.into(),
        tenant: String::new(),
        protocol_version: PROTOCOL_VERSION.into(),
    };
    let mut tags: Vec<String> = spec.keywords.iter().take(8).cloned().collect();
    if let Some(d) = &spec.domain {
        tags.insert(0, d.clone());
    }
    let description = if spec.description.trim().is_empty() {
        format!("{} (Switchboard agent)", spec.name)
    } else {
        spec.description.clone()
    };
    let mut skills: Vec<AgentSkill> = spec
        .capabilities
        .iter()
        .map(|c| AgentSkill {
            id: c.clone(),
            name: c.replace(['_', '-'], " "),
            description: format!("{}: {}", spec.name, c.replace(['_', '-'], " ")),
            tags: std::iter::once(c.clone()).chain(tags.iter().cloned()).collect(),
            examples: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
        })
        .collect();
    if skills.is_empty() {
        skills.push(AgentSkill {
            id: spec.slug.to_string(),
            name: spec.name.clone(),
            description: description.clone(),
            tags: if tags.is_empty() { vec![spec.slug.to_string()] } else { tags },
            examples: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
        });
    }
    let mut schemes = Map::new();
    schemes.insert(
        "bearer".into(),
        json!({"httpAuthSecurityScheme": {
            "scheme": "Bearer",
            "description": "A Switchboard token: a user's token talks to the agent as that user; an agent's service token delegates as that agent and must carry the rails extension."
        }}),
    );
    let mut requirements = vec![json!({"schemes": {"bearer": {"list": []}}})];
    if anonymous {
        // this service lets unauthenticated calls act as its configured anonymous user
        requirements.push(json!({"schemes": {}}));
    }
    AgentCard {
        name: spec.name.clone(),
        description,
        supported_interfaces: interfaces(interface("JSONRPC"), interface("HTTP+JSON"), spec, base),
        provider: Some(AgentProvider { url: base.into(), organization: "Switchboard".into() }),
        version: env!("CARGO_PKG_VERSION").into(),
        documentation_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extensions: vec![
                AgentExtension {
                    uri: RAILS_EXTENSION.into(),
                    description:
                        "Switchboard's delegation rails (request/root/parent ids, origin, user, depth, max depth, \
                              chain, remaining deadline and token budget, tools, priority) in message metadata; \
                              required with a service token, absent for users (a fresh tree at depth 0)"
                            .into(),
                    required: false,
                    params: None,
                },
                AgentExtension {
                    uri: LINEAGE_EXTENSION.into(),
                    description: "Signed, attenuating delegation lineage (docs/LINEAGE.md): a token in \
                              metadata {\"token\": \"…\"} whose chain this runtime verifies against the keys \
                              it trusts and whose rails (depth, path, user, deadline, budget, tools) it enforces; \
                              an agent's call without one must come from an agent allowed to start trees"
                        .into(),
                    required: false,
                    params: None,
                },
                AgentExtension {
                    uri: PUSH_SIGNATURE_EXTENSION.into(),
                    description: "Push notifications are signed: X-Switchboard-Signature holds a JWS (compact, \
                              detached payload, EdDSA/Ed25519) over the request body, with kid, iat (seconds), \
                              a2aTaskId and a2aEventSeq in its protected header; the keys are at jwksUri"
                        .into(),
                    required: false,
                    params: Some(Map::from_iter([
                        ("jwksUri".to_string(), json!(format!("{base}{}", super::push::JWKS_PATH))),
                        ("header".to_string(), json!(super::push::SIGNATURE_HEADER)),
                        ("alg".to_string(), json!("EdDSA")),
                    ])),
                },
            ],
            extended_agent_card: Some(true),
        },
        security_schemes: schemes,
        security_requirements: requirements,
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into(), "application/json".into()],
        skills,
    }
}

/// The extended card (GetExtendedAgentCard) of `spec` for an authenticated
/// `caller`: the public card, with the rails extension's parameters (the
/// limits in force for this agent: depth, deadline, token budget; the tools
/// it may use and those that wait for a person's approval; the agents it may
/// delegate to; whether it sees raw PII), and the skills only when the
/// caller may use the agent (a user it does not serve gets none, and is told
/// so in the description).
pub(crate) fn extended_agent_card(
    spec: &AgentSpec,
    base: &str,
    anonymous: bool,
    caller: &Principal,
    limits: &Limits,
) -> AgentCard {
    let mut card = agent_card(spec, base, anonymous);
    let params = Map::from_iter([
        ("maxDepth".to_string(), json!(limits.max_depth)),
        ("maxDepthCeiling".to_string(), json!(limits.max_depth_ceiling)),
        ("deadlineMs".to_string(), json!(spec.limits.deadline_ms.unwrap_or(limits.deadline_ms))),
        ("maxTokens".to_string(), json!(spec.limits.max_tokens.unwrap_or(limits.max_tokens))),
        ("toolsAllowed".to_string(), json!(spec.tools_allowed)),
        ("requiresApproval".to_string(), json!(spec.requires_approval)),
        ("mayDelegateTo".to_string(), json!(spec.may_delegate_to)),
        ("piiAccess".to_string(), json!(spec.pii_access)),
    ]);
    if let Some(rails) = card.capabilities.extensions.iter_mut().find(|e| e.uri == RAILS_EXTENSION) {
        rails.params = Some(params);
    }
    let may_use = match caller.user() {
        Some(user) => spec.allowed_users.contains("*") || spec.allowed_users.contains(user.as_str()),
        None => true,
    };
    if !may_use {
        card.skills.clear();
        card.description =
            format!("{} (you are not among this agent's users: it will refuse your messages)", card.description);
    }
    card
}

/// The card's interfaces: JSON-RPC and HTTP+JSON at the agent's URL and,
/// with the `grpc` feature, gRPC at the service's `host:port` with the agent
/// as the tenant.
#[cfg_attr(not(feature = "grpc"), allow(unused_variables))]
fn interfaces(jsonrpc: AgentInterface, rest: AgentInterface, spec: &AgentSpec, base: &str) -> Vec<AgentInterface> {
    #[cfg_attr(not(feature = "grpc"), allow(unused_mut))]
    let mut all = vec![jsonrpc, rest];
    #[cfg(feature = "grpc")]
    all.push(AgentInterface {
        url: grpc_address(base),
        protocol_binding: "GRPC".into(),
        tenant: spec.slug.to_string(),
        protocol_version: PROTOCOL_VERSION.into(),
    });
    all
}

/// `http(s)://host[:port]` as gRPC's `host:port` (a2a.proto's AgentInterface.url).
#[cfg(feature = "grpc")]
fn grpc_address(base: &str) -> String {
    let (https, host) = match base.split_once("://") {
        Some((scheme, host)) => (scheme.eq_ignore_ascii_case("https"), host),
        None => (false, base),
    };
    let host = host.trim_end_matches('/');
    let has_port = host
        .rsplit_once(':')
        .is_some_and(|(h, p)| !p.is_empty() && !h.ends_with('[') && p.bytes().all(|b| b.is_ascii_digit()))
        && !host.ends_with(']');
    if has_port { host.to_string() } else { format!("{host}:{}", if https { 443 } else { 80 }) }
}

#[cfg(all(test, feature = "grpc"))]
mod tests {
    use super::grpc_address;

    #[test]
    fn the_grpc_address_is_host_and_port() {
        assert_eq!(grpc_address("http://127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(grpc_address("https://agents.example.com"), "agents.example.com:443");
        assert_eq!(grpc_address("http://example.com"), "example.com:80");
        assert_eq!(grpc_address("http://[::1]:9"), "[::1]:9");
        assert_eq!(grpc_address("http://[::1]"), "[::1]:80");
    }
}
