//! `[a2a.push]`: how A2A push notifications are delivered (docs/A2A.md,
//! "Push notifications").

use std::net::IpAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[a2a.push]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aPushConfig {
    /// Addresses a webhook may resolve to although they are not globally
    /// routable or are this host's own (refused otherwise; docs/A2A.md, "Push
    /// notifications"): IPs or CIDR ranges, e.g. `["127.0.0.1", "10.0.0.0/8"]`.
    /// Empty by default.
    #[serde(default)]
    pub allow_private: Vec<String>,
    /// The Ed25519 key that signs deliveries: a file holding the 32-byte
    /// seed in base64, created (mode 0600) when missing. Unset: a fresh key
    /// for each process (receivers then fetch the JWKS again after a restart).
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// Tries per event, the first included (5).
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
    /// The wait before the second try; doubled for each further one (1000 ms:
    /// 1 + 2 + 4 + 8 s between five tries).
    #[serde(default = "default_retry_base_ms")]
    pub retry_base_ms: u64,
    /// How long one POST may take (10 000 ms).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

impl Default for A2aPushConfig {
    fn default() -> Self {
        Self {
            allow_private: Vec::new(),
            key_file: None,
            max_attempts: default_attempts(),
            retry_base_ms: default_retry_base_ms(),
            timeout_ms: default_timeout_ms(),
        }
    }
}

fn default_attempts() -> u32 {
    5
}
fn default_retry_base_ms() -> u64 {
    1_000
}
fn default_timeout_ms() -> u64 {
    10_000
}

impl A2aPushConfig {
    /// `allow_private` parsed; the first entry that is neither an IP nor a CIDR range is the error.
    pub fn allowed_ranges(&self) -> Result<Vec<IpRange>, String> {
        self.allow_private.iter().map(|s| IpRange::parse(s)).collect()
    }

    /// Checks the table: ranges that parse, at least one try, a timeout.
    pub fn validate(&self) -> Result<(), String> {
        self.allowed_ranges()?;
        if self.max_attempts == 0 || self.max_attempts > 20 {
            return Err("a2a.push.max_attempts must be between 1 and 20".into());
        }
        if self.timeout_ms == 0 {
            return Err("a2a.push.timeout_ms must be above 0".into());
        }
        Ok(())
    }
}

/// An IP range: an address and a prefix length (a single address has the full length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    /// The range's first address.
    pub addr: IpAddr,
    /// How many leading bits an address must share with `addr`.
    pub prefix: u8,
}

impl IpRange {
    /// Parses `10.0.0.0/8`, `fc00::/7` or a bare address.
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("a2a.push.allow_private: '{s}' is not an IP address or a CIDR range such as 10.0.0.0/8");
        let (ip, prefix) = match s.trim().split_once('/') {
            Some((ip, p)) => (ip, Some(p.parse::<u8>().map_err(|_| bad())?)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = ip.trim_matches(['[', ']']).parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return Err(bad());
        }
        Ok(Self { addr, prefix })
    }

    /// Whether `ip` is in the range (an IPv4-mapped IPv6 address counts as its IPv4 one).
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.holds(ip.to_canonical())
    }

    /// Whether `ip` is in the range as written: an IPv4-mapped IPv6 address
    /// is an IPv6 one here.
    pub fn holds(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => prefix_eq(&a.octets(), &b.octets(), self.prefix),
            (IpAddr::V6(a), IpAddr::V6(b)) => prefix_eq(&a.octets(), &b.octets(), self.prefix),
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let (whole, rest) = (usize::from(bits / 8), bits % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || {
        let mask = 0xffu8 << (8 - rest);
        a[whole] & mask == b[whole] & mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_match() {
        let r = IpRange::parse("10.0.0.0/8").unwrap();
        assert!(r.contains("10.1.2.3".parse().unwrap()));
        assert!(!r.contains("11.0.0.1".parse().unwrap()));
        assert!(r.contains("::ffff:10.9.9.9".parse().unwrap()), "IPv4-mapped");
        let one = IpRange::parse("127.0.0.1").unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()) && !one.contains("127.0.0.2".parse().unwrap()));
        let v6 = IpRange::parse("[fc00::]/7").unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()) && !v6.contains("fe80::1".parse().unwrap()));
        assert!(IpRange::parse("172.16.0.0/12").unwrap().contains("172.31.255.1".parse().unwrap()));
        for bad in ["localhost", "10.0.0.0/33", "1.2.3.4/x", ""] {
            assert!(IpRange::parse(bad).unwrap_err().contains("allow_private"), "{bad}");
        }
        let c = A2aPushConfig { allow_private: vec!["nope".into()], ..A2aPushConfig::default() };
        assert!(c.validate().is_err());
        assert!(A2aPushConfig::default().validate().is_ok());
    }
}
