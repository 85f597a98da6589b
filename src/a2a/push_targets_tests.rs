use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Blocks a webhook may never reach, written here from the registries and
/// the issue, apart from the table, so that the table is checked against them.
const REFUSED_V4: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/29",
    "192.0.0.170/31",
    "192.0.2.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "255.255.255.255/32",
];
const REFUSED_V6: &[&str] = &[
    "::/128",
    "::1/128",
    "::/96",
    "64:ff9b:1::/48",
    "100::/64",
    "100:0:0:1::/64",
    "2001::/32",
    "2001:2::/48",
    "2001:10::/28",
    "2001:db8::/32",
    "2002::/16",
    "3fff::/20",
    "5f00::/16",
    "fc00::/7",
    "fe80::/10",
    "fec0::/10",
    "ff00::/8",
    // outside 2000::/3
    "4000::/3",
    "400::/6",
];
/// A sample of globally routable space (regional registries' allocations).
const GLOBAL_V4: &[&str] = &["1.0.0.0/8", "8.0.0.0/8", "23.0.0.0/8", "45.0.0.0/8", "93.0.0.0/8", "151.0.0.0/8"];
const GLOBAL_V6: &[&str] = &["2400::/12", "2600::/12", "2800::/12", "2a00::/12", "2c00::/12"];

/// An address in `range`: its prefix, then random bits.
fn address_in(range: &'static str) -> BoxedStrategy<IpAddr> {
    let r = IpRange::parse(range).unwrap();
    match r.addr {
        IpAddr::V4(base) => any::<u32>()
            .prop_map(move |bits| {
                let host = bits.checked_shr(u32::from(r.prefix)).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from_bits(base.to_bits() | host))
            })
            .boxed(),
        IpAddr::V6(base) => any::<u128>()
            .prop_map(move |bits| {
                let host = bits.checked_shr(u32::from(r.prefix)).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from_bits(base.to_bits() | host))
            })
            .boxed(),
    }
}

fn any_of(ranges: &'static [&'static str]) -> BoxedStrategy<IpAddr> {
    proptest::strategy::Union::new(ranges.iter().map(|r| address_in(r))).boxed()
}

fn v4(ip: IpAddr) -> Ipv4Addr {
    match ip {
        IpAddr::V4(v4) => v4,
        IpAddr::V6(_) => unreachable!("an IPv4 strategy"),
    }
}

/// The IPv6 forms that carry `v4`: mapped, compatible, NAT64 (well-known and
/// local-use), 6to4 and Teredo (server 65.54.227.120, the client inverted).
fn carriers(v4: Ipv4Addr) -> [Ipv6Addr; 6] {
    let b = v4.to_bits();
    let (hi, lo) = ((b >> 16) as u16, b as u16);
    [
        v4.to_ipv6_mapped(),
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, hi, lo),
        Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, hi, lo),
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, hi, lo),
        Ipv6Addr::new(0x2002, hi, lo, 0, 0, 0, 0, 1),
        Ipv6Addr::new(0x2001, 0, 0x4136, 0xe378, 0x8000, 0x63bf, !hi, !lo),
    ]
}

#[test]
fn every_row_parses_and_names_a_block_of_its_own() {
    assert_eq!(BLOCKS.len(), TABLE.len());
    for (i, b) in BLOCKS.iter().enumerate() {
        assert!(BLOCKS[..i].iter().all(|o| o.range != b.range), "{} twice", b.text);
        let first = IpRange::parse(&b.range.addr.to_string()).unwrap();
        assert!(b.range.holds(first.addr), "{} is written as its first address", b.text);
    }
}

#[test]
fn the_refusal_names_the_block_and_what_it_carries() {
    for (addr, why) in [
        ("192.0.2.1", "192.0.2.1 is a documentation address (TEST-NET-1, RFC 5737) in 192.0.2.0/24"),
        ("198.51.100.7", "TEST-NET-2"),
        ("203.0.113.9", "TEST-NET-3"),
        ("198.19.0.1", "benchmarking"),
        ("127.0.0.1", "127.0.0.1 is a loopback address (RFC 1122) in 127.0.0.0/8"),
        ("169.254.169.254", "link-local"),
        ("224.0.0.1", "multicast"),
        ("255.255.255.255", "limited broadcast"),
        ("192.0.0.8", "dummy"),
        (
            "::ffff:10.0.0.1",
            "::ffff:10.0.0.1 is an IPv4-mapped address (RFC 4291) in ::ffff:0:0/96 carrying 10.0.0.1, and 10.0.0.1 is a private-use",
        ),
        ("64:ff9b::7f00:1", "carrying 127.0.0.1, and 127.0.0.1 is a loopback address"),
        ("::7f00:1", "::7f00:1 is a deprecated IPv4-compatible address (RFC 4291) in ::/96 (it carries 127.0.0.1)"),
        ("2002:c000:22a::1", "a 6to4 address (RFC 3056) in 2002::/16 (it carries 192.0.2.42)"),
        // RFC 4380's example: client 192.0.2.45 behind a NAT
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "a Teredo address (RFC 4380) in 2001::/32 (it carries 192.0.2.45)"),
        ("64:ff9b:1::a00:1", "local-use NAT64"),
        ("fec0::1", "site-local"),
        ("5f00::1", "SRv6"),
        ("3fff::1", "documentation"),
        ("100:0:0:1::1", "dummy"),
        ("4000::1", "4000::1 is an address outside IPv6 global unicast (2000::/3), reserved by the IETF"),
    ] {
        let said = special_purpose(ip(addr)).unwrap_or_else(|| panic!("{addr} was let through"));
        assert!(said.contains(why), "{addr}: {said}");
    }
}

#[test]
fn what_the_registry_calls_globally_reachable_inside_a_refused_block_is_let_through() {
    for addr in ["192.0.0.9", "192.0.0.10", "2001:1::1", "2001:1::3", "2001:3::1", "2001:20::1", "2001:4:112::1"] {
        assert_eq!(special_purpose(ip(addr)), None, "{addr}");
    }
    assert!(special_purpose(ip("192.0.0.11")).is_some() && special_purpose(ip("2001:1::4")).is_some());
}

#[test]
fn the_hosts_own_addresses_are_refused_even_when_globally_routable() {
    let own = [ip("93.184.216.34"), ip("2606:4700::1111")];
    for addr in ["93.184.216.34", "::ffff:93.184.216.34", "2606:4700::1111"] {
        let said = blocked(ip(addr), &own).unwrap_or_else(|| panic!("{addr} was let through"));
        assert_eq!(said, format!("{addr} is one of this host's own addresses"));
    }
    assert_eq!(blocked(ip("93.184.216.35"), &own), None);
}

#[test]
fn every_address_this_host_has_is_refused() {
    let own = host_addresses().unwrap();
    assert!(own.contains(&ip("127.0.0.1")), "the interfaces were read: {own:?}");
    for addr in &own {
        assert!(blocked(*addr, &own).is_some(), "{addr}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn special_purpose_addresses_are_refused(addr in any_of(REFUSED_V4).prop_union(any_of(REFUSED_V6))) {
        prop_assert!(special_purpose(addr).is_some(), "{} was let through", addr);
        prop_assert!(blocked(addr, &[]).is_some());
    }

    #[test]
    fn an_ipv6_form_carrying_an_ipv4_address_is_refused_when_that_address_is(refused in any_of(REFUSED_V4)) {
        for carrier in carriers(v4(refused)) {
            prop_assert!(special_purpose(IpAddr::V6(carrier)).is_some(), "{} carrying {} was let through", carrier, refused);
        }
    }

    #[test]
    fn globally_routable_addresses_are_accepted(addr in any_of(GLOBAL_V4).prop_union(any_of(GLOBAL_V6))) {
        prop_assert_eq!(special_purpose(addr), None);
        prop_assert_eq!(blocked(addr, &[]), None);
    }

    #[test]
    fn only_mapped_and_well_known_nat64_forms_of_a_global_address_are_accepted(global in any_of(GLOBAL_V4)) {
        let [mapped, compatible, nat64, local_nat64, six_to_four, teredo] = carriers(v4(global));
        for accepted in [mapped, nat64] {
            prop_assert_eq!(special_purpose(IpAddr::V6(accepted)), None);
        }
        for refused in [compatible, local_nat64, six_to_four, teredo] {
            prop_assert!(special_purpose(IpAddr::V6(refused)).is_some(), "{}", refused);
        }
    }
}
