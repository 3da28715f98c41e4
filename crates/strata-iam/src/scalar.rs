//! The typed values condition operators compare: numbers, dates, booleans, CIDR blocks. Each
//! parser takes text from a policy or a request and answers `None` for anything malformed.

use std::net::IpAddr;

/// `Numeric*` operands: integers or decimals (AWS allows both), finite.
pub fn number(s: &str) -> Option<f64> {
    let s = s.trim();
    let ok = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
    s.parse::<f64>().ok().filter(|n| ok && n.is_finite())
}

/// `Bool` operands: `true` or `false`, in any case.
pub fn boolean(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// `Date*` operands, in milliseconds since the Unix epoch: epoch seconds (`1700000000`, digits
/// only, so a bare `2026` is a time in 1970 and not a year) or the W3C profile of ISO 8601 that
/// AWS documents: `YYYY-MM`, `YYYY-MM-DD`, `YYYY-MM-DDThh:mm`, `...:ss`, `...:ss.fff`, followed
/// by `Z`, `+hh:mm` or `-hh:mm` (none means UTC).
pub fn date(s: &str) -> Option<i64> {
    let s = s.trim();
    let (sign, digits) = match s.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, s),
    };
    if !digits.is_empty() && digits.len() <= 12 && digits.bytes().all(|b| b.is_ascii_digit()) {
        return digits.parse::<i64>().ok().map(|secs| sign * secs * 1000);
    }
    iso8601(s)
}

fn iso8601(s: &str) -> Option<i64> {
    let (date, time) = match s.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut fields = date.split('-');
    let year = fixed(fields.next()?, 4)?;
    let month = fields.next().map_or(Some(1), |m| fixed(m, 2))?;
    let day = fields.next().map_or(Some(1), |d| fixed(d, 2))?;
    if fields.next().is_some() || !(1..=12).contains(&month) || !(1..=days_in(year, month)).contains(&day) {
        return None;
    }
    let days = strata_types::time::days_from_civil(year, month as u32, day as u32);
    let (time_ms, offset_ms) = match time {
        Some(t) => clock(t)?,
        None => (0, 0),
    };
    Some(days * 86_400_000 + time_ms - offset_ms)
}

/// `hh:mm[:ss[.fff]]` and a zone → (milliseconds into the day, zone offset in milliseconds).
fn clock(t: &str) -> Option<(i64, i64)> {
    let zone_at = t.find(['Z', '+', '-']).unwrap_or(t.len());
    let (clock, zone) = t.split_at(zone_at);
    let offset = match zone {
        "" | "Z" => 0,
        _ => {
            let (sign, hm) = zone.split_at(1);
            let (h, m) = hm.split_once(':')?;
            let (h, m) = (fixed(h, 2)?, fixed(m, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            (h * 60 + m) * 60_000 * if sign == "-" { -1 } else { 1 }
        }
    };
    let mut fields = clock.split(':');
    let hour = fixed(fields.next()?, 2)?;
    let minute = fixed(fields.next()?, 2)?;
    let (second, millis) = match fields.next() {
        None => (0, 0),
        Some(sec) => {
            let (whole, fraction) = sec.split_once('.').unwrap_or((sec, ""));
            let millis = if fraction.is_empty() && !sec.contains('.') {
                0
            } else {
                if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let first3: String = fraction.chars().chain("00".chars()).take(3).collect();
                first3.parse::<i64>().ok()?
            };
            (fixed(whole, 2)?, millis)
        }
    };
    if fields.next().is_some() || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some((((hour * 60 + minute) * 60 + second) * 1000 + millis, offset))
}

/// Exactly `width` ASCII digits.
fn fixed(s: &str, width: usize) -> Option<i64> {
    (s.len() == width && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

fn days_in(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// An `IpAddress` operand: a CIDR block, or one address (a /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix_len: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Option<Cidr> {
        let (addr, len) = match s.trim().split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s.trim(), None),
        };
        let network: IpAddr = addr.parse().ok()?;
        let bits = if network.is_ipv4() { 32 } else { 128 };
        let prefix_len = match len {
            None => bits,
            Some(l) if !l.is_empty() && l.len() <= 3 && l.bytes().all(|b| b.is_ascii_digit()) => {
                l.parse().ok()?
            }
            Some(_) => return None,
        };
        (prefix_len <= bits).then_some(Cidr { network, prefix_len })
    }

    /// Does the block leave some addresses out (is it narrower than `/0`)?
    pub fn is_restricting(&self) -> bool {
        self.prefix_len > 0
    }

    /// Is `ip` in the block? IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) count as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix_len)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix_len)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let t = 1_700_000_000_000; // 2023-11-14T22:13:20Z
        assert_eq!(date("1700000000"), Some(t));
        assert_eq!(date("2023-11-14T22:13:20Z"), Some(t));
        assert_eq!(date("2023-11-14T22:13:20.5Z"), Some(t + 500));
        assert_eq!(date("2023-11-14T22:13:20.123456Z"), Some(t + 123));
        assert_eq!(date("2023-11-15T00:13:20+02:00"), Some(t));
        assert_eq!(date("2023-11-14T20:13:20-02:00"), Some(t));
        assert_eq!(date("2023-11-14T22:13Z"), Some(t - 20_000));
        assert_eq!(date("2023-11-14T22:13:20"), Some(t));
        assert_eq!(date("2023-11-14"), Some(t - (22 * 3600 + 13 * 60 + 20) * 1000));
        assert_eq!(date("2023-11"), date("2023-11-01"));
        assert_eq!(date("1969-12-31T23:59:59Z"), Some(-1000));
        assert_eq!(date("-1"), Some(-1000));
        assert_eq!(date("2024-02-29"), Some(1_709_164_800_000), "leap day");
        for bad in [
            "",
            "2023-02-29",
            "2023-13-01",
            "2023-11-14T25:00Z",
            "2023-11-14T22:13:20.Z",
            "23-11-14",
            "2023-11-14T22",
            "2023-11-14T22:13:20+2",
            "tomorrow",
            "1e9",
            "2023-11-14T22:13:20Zjunk",
            "9999999999999999999999",
        ] {
            assert_eq!(date(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn numbers_and_booleans() {
        assert_eq!(number("10"), Some(10.0));
        assert_eq!(number("-2.5"), Some(-2.5));
        for bad in ["", "ten", "inf", "NaN", "0x10", "1e999"] {
            assert_eq!(number(bad), None, "{bad:?}");
        }
        assert_eq!(boolean("TRUE"), Some(true));
        assert_eq!(boolean("false"), Some(false));
        assert_eq!(boolean("yes"), None);
    }

    #[test]
    fn cidrs() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        let c = Cidr::parse("192.168.1.0/24").expect("cidr");
        assert!(c.contains(ip("192.168.1.77")));
        assert!(!c.contains(ip("192.168.2.1")));
        assert!(c.contains(ip("::ffff:192.168.1.9")), "IPv4-mapped IPv6");
        assert!(!c.contains(ip("2001:db8::1")));
        let one = Cidr::parse("10.0.0.1").expect("address");
        assert!(one.contains(ip("10.0.0.1")) && !one.contains(ip("10.0.0.2")));
        let all = Cidr::parse("0.0.0.0/0").expect("cidr");
        assert!(all.contains(ip("8.8.8.8")));
        let v6 = Cidr::parse("2001:db8::/32").expect("cidr");
        assert!(v6.contains(ip("2001:db8:ffff::1")) && !v6.contains(ip("2001:db9::1")));
        assert!(!v6.contains(ip("10.0.0.1")));
        assert!(Cidr::parse("::/0").expect("cidr").contains(ip("::1")));
        for bad in ["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0/8", "host", "10.0.0.0/-1"] {
            assert_eq!(Cidr::parse(bad), None, "{bad:?}");
        }
    }
}
