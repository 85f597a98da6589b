//! Where an A2A push notification may go: a globally routable address that
//! is not this host's own. [`blocked`] is the one rule; `check_url` (push.rs)
//! applies it to every address a webhook's host resolves to, when a config is
//! made and again before each POST.
//!
//! The table is IANA's IPv4 and IPv6 Special-Purpose Address Registries,
//! written out by hand: the IPv4 registry as last updated 2020-09-04 (its
//! newest rows are RFC 8880's 192.0.0.170/31), the IPv6 registry with the rows
//! added through 2025 (3fff::/20 of RFC 9637, 5f00::/16 of RFC 9602,
//! 2001:1::3/128 of RFC 9665, 100:0:0:1::/64 of RFC 9780). A block whose
//! "Globally Reachable" is False or N/A (a deprecated block) is refused; a
//! block inside it whose value is True (192.0.0.9/32 inside 192.0.0.0/24) is
//! not: the most specific row that holds an address decides. Besides the
//! registries: IPv4 multicast (224/4) from the IPv4 address space registry,
//! and for IPv6 everything outside global unicast 2000::/3 (the IPv6 address
//! space registry reserves it), with rows that name the deprecated
//! IPv4-compatible (::/96) and site-local (fec0::/10) blocks and multicast.
//!
//! Forms that carry an IPv4 address: an IPv4-mapped address (::ffff:0:0/96)
//! is what the socket connects to, its IPv4 address, so it is judged as that
//! address; so is the well-known NAT64 prefix (64:ff9b::/96, globally
//! reachable itself), since a translator on the way delivers to the address it
//! carries. IPv4-compatible, local-use NAT64 (64:ff9b:1::/48), 6to4 and Teredo
//! are refused whole; their refusal names the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use crate::config::IpRange;

/// What the registry says of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Globally reachable.
    Global,
    /// Not globally reachable; the IPv4 address it carries (if any) is named.
    Local(Carries),
    /// As reachable as the IPv4 address it carries.
    As(Carries),
}

/// Where an IPv6 address of a block carries an IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carries {
    Nothing,
    /// The last 32 bits (IPv4-mapped, IPv4-compatible, NAT64 /96).
    Last32,
    /// Bits 16 to 47 (6to4, RFC 3056).
    SixToFour,
    /// The last 32 bits inverted (Teredo's client, RFC 4380).
    TeredoClient,
}

impl Carries {
    fn v4(self, ip: Ipv6Addr) -> Option<Ipv4Addr> {
        let o = ip.octets();
        let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
        match self {
            Self::Nothing => None,
            Self::Last32 => Some(last),
            Self::SixToFour => Some(Ipv4Addr::new(o[2], o[3], o[4], o[5])),
            Self::TeredoClient => Some(Ipv4Addr::from_bits(!last.to_bits())),
        }
    }
}

const LOCAL: Reach = Reach::Local(Carries::Nothing);
const GLOBAL: Reach = Reach::Global;

/// The table: a block, what it is, and whether a webhook may reach it.
const TABLE: &[(&str, &str, Reach)] = &[
    // anything not listed below
    ("0.0.0.0/0", "a globally routable address", GLOBAL),
    // IANA IPv4 Special-Purpose Address Registry
    ("0.0.0.0/8", "a \"this network\" address (RFC 791)", LOCAL),
    ("0.0.0.0/32", "the \"this host on this network\" address (RFC 1122)", LOCAL),
    ("10.0.0.0/8", "a private-use address (RFC 1918)", LOCAL),
    ("100.64.0.0/10", "a shared (carrier-grade NAT) address (RFC 6598)", LOCAL),
    ("127.0.0.0/8", "a loopback address (RFC 1122)", LOCAL),
    ("169.254.0.0/16", "a link-local address, where cloud metadata services listen (RFC 3927)", LOCAL),
    ("172.16.0.0/12", "a private-use address (RFC 1918)", LOCAL),
    ("192.0.0.0/24", "an IETF protocol assignment (RFC 6890)", LOCAL),
    ("192.0.0.0/29", "an IPv4 service continuity address (RFC 7335)", LOCAL),
    ("192.0.0.8/32", "the IPv4 dummy address (RFC 7600)", LOCAL),
    ("192.0.0.9/32", "the Port Control Protocol anycast address (RFC 7723)", GLOBAL),
    ("192.0.0.10/32", "the TURN anycast address (RFC 8155)", GLOBAL),
    ("192.0.0.170/31", "a NAT64/DNS64 discovery address (RFC 8880)", LOCAL),
    ("192.0.2.0/24", "a documentation address (TEST-NET-1, RFC 5737)", LOCAL),
    ("192.31.196.0/24", "an AS112 address (RFC 7535)", GLOBAL),
    ("192.52.193.0/24", "an AMT address (RFC 7450)", GLOBAL),
    ("192.88.99.0/24", "a deprecated 6to4 relay anycast address (RFC 7526)", LOCAL),
    ("192.88.99.2/32", "the 6a44 relay anycast address (RFC 6751)", LOCAL),
    ("192.168.0.0/16", "a private-use address (RFC 1918)", LOCAL),
    ("192.175.48.0/24", "a direct delegation AS112 address (RFC 7534)", GLOBAL),
    ("198.18.0.0/15", "a benchmarking address (RFC 2544)", LOCAL),
    ("198.51.100.0/24", "a documentation address (TEST-NET-2, RFC 5737)", LOCAL),
    ("203.0.113.0/24", "a documentation address (TEST-NET-3, RFC 5737)", LOCAL),
    ("240.0.0.0/4", "a reserved address (RFC 1112)", LOCAL),
    ("255.255.255.255/32", "the limited broadcast address (RFC 919)", LOCAL),
    // IPv4 address space registry
    ("224.0.0.0/4", "a multicast address (RFC 5771)", LOCAL),
    // IPv6 address space registry: only 2000::/3 is global unicast
    ("::/0", "an address outside IPv6 global unicast (2000::/3), reserved by the IETF", LOCAL),
    ("2000::/3", "a globally routable address", GLOBAL),
    ("::/96", "a deprecated IPv4-compatible address (RFC 4291)", Reach::Local(Carries::Last32)),
    ("fec0::/10", "a deprecated site-local address (RFC 3879)", LOCAL),
    ("ff00::/8", "a multicast address (RFC 4291)", LOCAL),
    // IANA IPv6 Special-Purpose Address Registry
    ("::1/128", "the loopback address (RFC 4291)", LOCAL),
    ("::/128", "the unspecified address (RFC 4291)", LOCAL),
    ("::ffff:0:0/96", "an IPv4-mapped address (RFC 4291)", Reach::As(Carries::Last32)),
    ("64:ff9b::/96", "a NAT64 address (RFC 6052)", Reach::As(Carries::Last32)),
    ("64:ff9b:1::/48", "a local-use NAT64 address (RFC 8215)", LOCAL),
    ("100::/64", "a discard-only address (RFC 6666)", LOCAL),
    ("100:0:0:1::/64", "a dummy IPv6 address (RFC 9780)", LOCAL),
    ("2001::/23", "an IETF protocol assignment (RFC 2928)", LOCAL),
    ("2001::/32", "a Teredo address (RFC 4380)", Reach::Local(Carries::TeredoClient)),
    ("2001:1::1/128", "the Port Control Protocol anycast address (RFC 7723)", GLOBAL),
    ("2001:1::2/128", "the TURN anycast address (RFC 8155)", GLOBAL),
    ("2001:1::3/128", "the DNS-SD service registration anycast address (RFC 9665)", GLOBAL),
    ("2001:2::/48", "a benchmarking address (RFC 5180)", LOCAL),
    ("2001:3::/32", "an AMT address (RFC 7450)", GLOBAL),
    ("2001:4:112::/48", "an AS112 address (RFC 7535)", GLOBAL),
    ("2001:10::/28", "a deprecated ORCHID address (RFC 4843)", LOCAL),
    ("2001:20::/28", "an ORCHIDv2 address (RFC 7343)", GLOBAL),
    ("2001:30::/28", "a drone remote ID address (RFC 9374)", GLOBAL),
    ("2001:db8::/32", "a documentation address (RFC 3849)", LOCAL),
    ("2002::/16", "a 6to4 address (RFC 3056)", Reach::Local(Carries::SixToFour)),
    ("2620:4f:8000::/48", "a direct delegation AS112 address (RFC 7534)", GLOBAL),
    ("3fff::/20", "a documentation address (RFC 9637)", LOCAL),
    ("5f00::/16", "an SRv6 segment identifier (RFC 9602)", LOCAL),
    ("fc00::/7", "a unique local (private) address (RFC 4193)", LOCAL),
    ("fe80::/10", "a link-local address (RFC 4291)", LOCAL),
];

/// One row of [`TABLE`], parsed.
struct Block {
    range: IpRange,
    text: &'static str,
    name: &'static str,
    reach: Reach,
}

static BLOCKS: LazyLock<Vec<Block>> = LazyLock::new(|| {
    TABLE
        .iter()
        .map(|&(text, name, reach)| {
            // a constant of this file, parsed by every test of it
            let range = IpRange::parse(text).unwrap_or_else(|e| panic!("the push target table: {e}"));
            Block { range, text, name, reach }
        })
        .collect()
});

/// The most specific block that holds `ip` (0.0.0.0/0 and ::/0 hold every address).
fn block_of(ip: IpAddr) -> Option<&'static Block> {
    BLOCKS.iter().filter(|b| b.range.holds(ip)).max_by_key(|b| b.range.prefix)
}

/// Why `ip` is not globally routable, or None when it is (see the module docs).
pub(crate) fn special_purpose(ip: IpAddr) -> Option<String> {
    let Some(block) = block_of(ip) else {
        return Some(format!("{ip} is in no block of the table of reachable addresses"));
    };
    let carried = |c: Carries| match ip {
        IpAddr::V6(v6) => c.v4(v6),
        IpAddr::V4(_) => None,
    };
    let said = || {
        if block.range.prefix == 0 {
            format!("{ip} is {}", block.name)
        } else {
            format!("{ip} is {} in {}", block.name, block.text)
        }
    };
    match block.reach {
        Reach::Global => None,
        Reach::Local(c) => Some(match carried(c) {
            Some(v4) => format!("{} (it carries {v4})", said()),
            None => said(),
        }),
        Reach::As(c) => {
            let Some(v4) = carried(c) else { return Some(said()) };
            special_purpose(IpAddr::V4(v4)).map(|why| format!("{} carrying {v4}, and {why}", said()))
        }
    }
}

/// Why a webhook may not reach `ip`: it is not globally routable
/// ([`special_purpose`]), or it is one of `own`, this host's addresses.
pub(crate) fn blocked(ip: IpAddr, own: &[IpAddr]) -> Option<String> {
    special_purpose(ip).or_else(|| {
        let canonical = ip.to_canonical();
        own.iter().any(|o| o.to_canonical() == canonical).then(|| format!("{ip} is one of this host's own addresses"))
    })
}

/// This host's addresses, as its network interfaces have them now.
pub(crate) fn host_addresses() -> Result<Vec<IpAddr>, String> {
    let interfaces =
        nix::ifaddrs::getifaddrs().map_err(|e| format!("this host's own addresses could not be read ({e})"))?;
    Ok(interfaces
        .filter_map(|i| i.address)
        .filter_map(|a| {
            a.as_sockaddr_in().map(|s| IpAddr::V4(s.ip())).or_else(|| a.as_sockaddr_in6().map(|s| IpAddr::V6(s.ip())))
        })
        .collect())
}

#[cfg(test)]
#[path = "push_targets_tests.rs"]
mod tests;
