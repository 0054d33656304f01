//! Where the server may reach out to: the addresses that outgoing requests made on someone
//! else's word (a webhook's URL, a client metadata document's URL) may not reach unless the
//! operator allows it, so that a caller cannot make the server call the studio's own network.

use std::net::{IpAddr, SocketAddr};

/// Whether an address is on this machine or a private network: loopback, private (RFC 1918,
/// unique local), link-local, unspecified, broadcast, CGNAT, `0.0.0.0/8`, or IPv4 in IPv6.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified() || v4.is_broadcast() || (a == 100 && (64..128).contains(&b)) || a == 0
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback() || v6.is_unspecified() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Whether a URL's host, as written, names a private address: a literal one, or `localhost`.
/// (A name is judged when it is resolved, by [`PublicOnly`].)
pub fn names_private(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(ip) => is_private(ip),
        Err(_) => host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost"),
    }
}

/// The refusal of a private host, naming the flag that allows it.
pub fn private_refusal(host: &str, what: &str, flag: &str) -> String {
    format!("{host} is a loopback, private or link-local address: {what} go only to public addresses unless the server runs with `serve {flag}`")
}

/// A resolver that refuses (with no address at all) a name resolving to any private address, so
/// that a public name cannot be pointed at the studio's own network after it was checked.
#[derive(Clone, Copy)]
pub struct PublicOnly {
    /// What the requests are ("webhooks"), and the flag that would allow private addresses.
    pub what: &'static str,
    pub flag: &'static str,
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (host, this) = (name.as_str().to_owned(), *self);
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.iter().any(|a| is_private(a.ip())) {
                return Err(private_refusal(&host, this.what, this.flag).into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_and_names_are_told_from_public_ones() {
        for host in ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "[::1]", "[fe80::1]", "[fd00::1]", "[::ffff:127.0.0.1]", "localhost", "api.localhost"] {
            assert!(names_private(host), "{host}");
        }
        for host in ["93.184.216.34", "[2606:2800:220:1::]", "example.com", "8.8.8.8"] {
            assert!(!names_private(host), "{host}");
        }
    }
}
