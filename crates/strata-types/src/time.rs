//! Calendar conversions on Unix time: ISO 8601 for listings, the compact SigV4 form
//! (`20130524T000000Z`) and its date stamp. Civil-date arithmetic after Howard Hinnant's
//! published days-from-civil algorithm (public domain description).

/// Days since 1970-01-01 → (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) → days since 1970-01-01 (proleptic Gregorian; negative before 1970).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

struct Parts {
    year: i64,
    month: u32,
    day: u32,
    hour: u64,
    minute: u64,
    second: u64,
}

fn parts(unix_secs: u64) -> Parts {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    Parts { year, month, day, hour: rem / 3600, minute: rem % 3600 / 60, second: rem % 60 }
}

/// `2009-10-12T17:50:30.000Z`, as S3 listings show times.
pub fn iso8601(unix_nanos: u64) -> String {
    let p = parts(unix_nanos / 1_000_000_000);
    let millis = (unix_nanos / 1_000_000) % 1000;
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        p.year, p.month, p.day, p.hour, p.minute, p.second
    )
}

/// `20130524T000000Z`, the SigV4 request time.
pub fn amz_date(unix_secs: u64) -> String {
    let p = parts(unix_secs);
    format!("{:04}{:02}{:02}T{:02}{:02}{:02}Z", p.year, p.month, p.day, p.hour, p.minute, p.second)
}

/// Parses `20130524T000000Z` into Unix seconds; `None` for anything else.
pub fn parse_amz_date(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u64> {
        let t = s.get(r)?;
        if !t.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        t.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hour, minute, second) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = days_from_civil(year as i64, month as u32, day as u32);
    u64::try_from(days).ok().map(|d| d * 86_400 + hour * 3600 + minute * 60 + second)
}

/// Parses `2009-10-12T17:50:30Z` or `2009-10-12T17:50:30.000Z` into Unix seconds (fractions
/// dropped); `None` for anything else.
pub fn parse_iso8601(s: &str) -> Option<u64> {
    let s = s.strip_suffix('Z')?;
    let (whole, fraction) = s.split_once('.').unwrap_or((s, "0"));
    let b = whole.as_bytes();
    let shaped =
        b.len() == 19 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':';
    if !shaped || fraction.is_empty() || !fraction.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let compact: String = whole.chars().filter(|c| *c != '-' && *c != ':').collect();
    parse_amz_date(&format!("{compact}Z"))
}

/// Parses `500ms`, `10s`, `2m`, `1h` (a bare number is seconds); `None` for anything else.
pub fn parse_duration(s: &str) -> Option<std::time::Duration> {
    let s = s.trim();
    let (num, secs_per) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let n: f64 = num.trim().parse().ok()?;
    (n.is_finite() && n >= 0.0).then(|| std::time::Duration::from_secs_f64(n * secs_per))
}

/// Now, in nanoseconds since the Unix epoch, by this process's clock: the system's, shifted by
/// `STRATA_TEST_CLOCK_SKEW` when that is set (a signed duration, `-50s` or `+30s`: for tests
/// that give one node a clock as wrong as a broken NTP would, RPC signing included).
pub fn now_nanos() -> u64 {
    let system = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    system.saturating_add_signed(test_skew_nanos())
}

/// `STRATA_TEST_CLOCK_SKEW` in nanoseconds (read once; 0 when unset or not a duration).
fn test_skew_nanos() -> i64 {
    static SKEW: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *SKEW.get_or_init(|| {
        std::env::var("STRATA_TEST_CLOCK_SKEW").ok().and_then(|v| parse_skew(&v)).unwrap_or(0)
    })
}

/// `-50s`, `+30s`, `2m`: a signed duration in nanoseconds.
pub fn parse_skew(s: &str) -> Option<i64> {
    let s = s.trim();
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, s.strip_prefix('+').unwrap_or(s)),
    };
    let nanos = i64::try_from(parse_duration(rest)?.as_nanos()).ok()?;
    Some(sign * nanos)
}

/// A wall clock. The object layer stamps new versions through one, so tests can run nodes whose
/// clocks disagree in one process; everything else reads [`now_nanos`].
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now, in nanoseconds since the Unix epoch.
    fn now_nanos(&self) -> u64;
}

/// This process's clock ([`now_nanos`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_nanos(&self) -> u64 {
        now_nanos()
    }
}

/// This process's clock shifted by `offset` nanoseconds (a node with a wrong clock, in tests).
#[derive(Debug, Clone, Copy)]
pub struct SkewedClock {
    pub offset: i64,
}

impl Clock for SkewedClock {
    fn now_nanos(&self) -> u64 {
        now_nanos().saturating_add_signed(self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skews_parse_and_shift() {
        assert_eq!(parse_skew("-50s"), Some(-50_000_000_000));
        assert_eq!(parse_skew("+2m"), Some(120_000_000_000));
        assert_eq!(parse_skew("30s"), Some(30_000_000_000));
        assert_eq!(parse_skew("later"), None);
        let ahead = SkewedClock { offset: 50_000_000_000 }.now_nanos();
        let now = SystemClock.now_nanos();
        assert!(ahead > now + 49_000_000_000 && ahead < now + 51_000_000_000);
    }

    #[test]
    fn known_dates() {
        assert_eq!(amz_date(1_369_353_600), "20130524T000000Z");
        assert_eq!(parse_amz_date("20130524T000000Z"), Some(1_369_353_600));
        assert_eq!(iso8601(1_255_369_830_123_000_000), "2009-10-12T17:50:30.123Z");
        assert_eq!(parse_amz_date("2013-05-24T00:00"), None);
        assert_eq!(parse_amz_date("20131324T000000Z"), None);
        assert_eq!(parse_iso8601("2009-10-12T17:50:30.123Z"), Some(1_255_369_830));
        assert_eq!(parse_iso8601("2009-10-12T17:50:30Z"), Some(1_255_369_830));
        for bad in
            ["2009-10-12T17:50:30", "2009-10-12 17:50:30Z", "2009-10-12T17:50:30.Z", "20091012T175030Z"]
        {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations() {
        use std::time::Duration;
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration("-1s"), None);
    }

    #[test]
    fn round_trip_many_days() {
        for secs in (0..4_000_000_000u64).step_by(7_777_777) {
            assert_eq!(parse_amz_date(&amz_date(secs)), Some(secs));
        }
    }
}
