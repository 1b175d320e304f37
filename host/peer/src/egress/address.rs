//! Which addresses a plugin's request may reach when its grant names a host: public ones
//! only. A name the operator granted can be made to resolve anywhere by whoever controls its
//! DNS — to the host's loopback services, the cloud's metadata endpoint that hands out
//! credentials, the private network — so every address a name resolves to is checked here,
//! and the connection is made to the checked address itself (never by resolving again: the
//! second answer could differ, DNS rebinding). An address the grant names literally is the
//! operator's explicit choice and is not checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A range of addresses a plugin may not reach through a granted name, with the name an
/// error shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecialRange {
    /// `0.0.0.0/8`, `::`: "this host", which connects to the host's own services.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// `100.64/10`, the carrier-grade NAT range (Alibaba's metadata endpoint is in it).
    Shared,
    /// `169.254/16`, `fe80::/10`.
    LinkLocal,
    /// The clouds' metadata endpoints: `169.254.169.254`, `169.254.170.2`, `fd00:ec2::254`.
    Metadata,
    /// `fc00::/7`.
    UniqueLocal,
    /// `224/4`, `ff00::/8`, `255.255.255.255`.
    Multicast,
    /// Documentation, benchmarking, IETF protocol assignments, the reserved `240/4`, the
    /// discard prefix, and IPv6 forms that tunnel to an IPv4 address the host cannot check
    /// (Teredo, IPv4-compatible).
    Reserved,
}

impl SpecialRange {
    /// What an error calls an address in this range ("a loopback address").
    pub fn described(self) -> &'static str {
        match self {
            SpecialRange::Unspecified => "an unspecified (this-host) address",
            SpecialRange::Loopback => "a loopback address",
            SpecialRange::Private => "a private address",
            SpecialRange::Shared => "a shared (carrier-grade NAT) address",
            SpecialRange::LinkLocal => "a link-local address",
            SpecialRange::Metadata => "a cloud metadata address",
            SpecialRange::UniqueLocal => "a unique local address",
            SpecialRange::Multicast => "a multicast or broadcast address",
            SpecialRange::Reserved => "a reserved address",
        }
    }
}

/// The special range `ip` is in, or `None` for an address on the public internet. An IPv6
/// address that carries an IPv4 one (mapped, NAT64, 6to4) is judged by the IPv4 address.
pub fn special_range(ip: IpAddr) -> Option<SpecialRange> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<SpecialRange> {
    let [a, b, c, d] = ip.octets();
    let range = match (a, b, c) {
        _ if [a, b, c, d] == [169, 254, 169, 254] || [a, b, c, d] == [169, 254, 170, 2] => {
            SpecialRange::Metadata
        }
        (0, _, _) => SpecialRange::Unspecified,
        (127, _, _) => SpecialRange::Loopback,
        (10, _, _) | (192, 168, _) => SpecialRange::Private,
        (172, 16..=31, _) => SpecialRange::Private,
        (100, 64..=127, _) => SpecialRange::Shared,
        (169, 254, _) => SpecialRange::LinkLocal,
        (224..=239, _, _) => SpecialRange::Multicast,
        _ if ip.is_broadcast() => SpecialRange::Multicast,
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => SpecialRange::Reserved,
        (198, 18..=19, _) => SpecialRange::Reserved,
        (240..=255, _, _) => SpecialRange::Reserved,
        _ => return None,
    };
    Some(range)
}

fn special_v6(ip: Ipv6Addr) -> Option<SpecialRange> {
    if ip == Ipv6Addr::UNSPECIFIED {
        return Some(SpecialRange::Unspecified);
    }
    if ip == Ipv6Addr::LOCALHOST {
        return Some(SpecialRange::Loopback);
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return special_v4(v4);
    }
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
    let range = match s {
        [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254] => SpecialRange::Metadata,
        // NAT64's well-known prefix reaches the IPv4 address in its last 32 bits.
        [0x0064, 0xff9b, 0, 0, 0, 0, hi, lo] => return special_v4(embedded(hi, lo)),
        // 6to4 reaches the IPv4 address in bits 16..48.
        [0x2002, hi, lo, ..] => return special_v4(embedded(hi, lo)),
        // IPv4-compatible (deprecated): `::a.b.c.d`.
        [0, 0, 0, 0, 0, 0, _, _] => SpecialRange::Reserved,
        // Teredo tunnels to an IPv4 address the host cannot see; the discard prefix;
        // documentation.
        [0x2001, 0, ..] | [0x0100, 0, 0, 0, ..] | [0x2001, 0x0db8, ..] => SpecialRange::Reserved,
        [first, ..] if first & 0xfe00 == 0xfc00 => SpecialRange::UniqueLocal,
        [first, ..] if first & 0xffc0 == 0xfe80 => SpecialRange::LinkLocal,
        [first, ..] if first & 0xff00 == 0xff00 => SpecialRange::Multicast,
        _ => return None,
    };
    Some(range)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(text: &str) -> Option<SpecialRange> {
        special_range(text.parse().expect("an address"))
    }

    #[test]
    fn every_range_a_granted_name_could_be_pointed_at_is_special() {
        use SpecialRange::*;
        let cases = [
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", Unspecified),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("10.0.0.1", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("100.64.0.1", Shared),
            ("100.100.100.200", Shared),
            ("169.254.0.1", LinkLocal),
            ("169.254.169.254", Metadata),
            ("169.254.170.2", Metadata),
            ("224.0.0.1", Multicast),
            ("239.255.255.250", Multicast),
            ("255.255.255.255", Multicast),
            ("240.0.0.1", Reserved),
            ("192.0.0.192", Reserved),
            ("192.0.2.1", Reserved),
            ("198.51.100.7", Reserved),
            ("203.0.113.9", Reserved),
            ("198.18.0.1", Reserved),
            ("::", Unspecified),
            ("::1", Loopback),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:169.254.169.254", Metadata),
            ("::ffff:10.1.2.3", Private),
            ("64:ff9b::a9fe:a9fe", Metadata),
            ("64:ff9b::7f00:1", Loopback),
            ("2002:7f00:0001::", Loopback),
            ("2002:c0a8:0101::1", Private),
            ("::127.0.0.1", Reserved),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Reserved),
            ("2001:db8::1", Reserved),
            ("100::1", Reserved),
            ("fd00:ec2::254", Metadata),
            ("fd12:3456::1", UniqueLocal),
            ("fc00::1", UniqueLocal),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("ff02::1", Multicast),
        ];
        for (address, expected) in cases {
            assert_eq!(range(address), Some(expected), "{address}");
        }
    }

    #[test]
    fn public_addresses_are_not_special() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.1.1",
            "192.169.0.1",
            "198.17.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
        ] {
            assert_eq!(range(address), None, "{address}");
        }
    }
}
