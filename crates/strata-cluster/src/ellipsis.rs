//! Ellipsis patterns: `/mnt/disk{1...4}`, `http://node{1...4}/d{01...16}`, `{a...d}`.
//!
//! Several ranges in one argument expand as a cartesian product, the first range varying
//! slowest, so `node{1...2}/d{1...2}` gives node1/d1, node1/d2, node2/d1, node2/d2.

use strata_types::limits::ELLIPSIS_EXPANSION_MAX;

/// A pattern that does not expand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid ellipsis pattern {pattern:?}: {reason}")]
pub struct EllipsisError {
    pub pattern: String,
    pub reason: &'static str,
}

/// How a range is written, shown with every pattern that does not expand.
const SYNTAX: &str = "a range is written with three dots: {1...4}, {01...16} or {a...d} \
                      (quote the argument so the shell leaves it alone)";

/// Whether `arg` holds an ellipsis range.
pub fn has_ellipsis(arg: &str) -> bool {
    arg.contains("...") && arg.contains('{')
}

/// Refuses a brace group that looks like a range but is not one (`{1..4}`, `{1-4}`, `{1,2}`,
/// `{1…4}`): taken literally it would name one folder, and the deployment would quietly run
/// on one drive with no redundancy.
pub fn check_lookalikes(arg: &str) -> Result<(), EllipsisError> {
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else { break };
        let inner = &rest[open + 1..close];
        if !inner.contains("...") && looks_like_range(inner) {
            return Err(EllipsisError { pattern: arg.to_owned(), reason: SYNTAX });
        }
        rest = &rest[close + 1..];
    }
    Ok(())
}

fn looks_like_range(inner: &str) -> bool {
    if inner.contains("..") || inner.contains('\u{2026}') {
        return true;
    }
    // `{1-4}`, `{a-d}`, `{1,2,3}`: shell and regex habits.
    let parts: Vec<&str> = inner.split(['-', ',', ':']).collect();
    parts.len() > 1 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Expands every `{x...y}` range of `pattern`.
pub fn expand(pattern: &str) -> Result<Vec<String>, EllipsisError> {
    check_lookalikes(pattern)?;
    let err = |reason| EllipsisError { pattern: pattern.to_owned(), reason };
    let mut results = vec![String::new()];
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map(|c| open + c).ok_or_else(|| err("unclosed '{'"))?;
        let inner = &rest[open + 1..close];
        let literal = &rest[..open];
        let values = match inner.split_once("...") {
            Some((lo, hi)) => range_values(lo, hi).ok_or_else(|| {
                err("a range is numbers or single letters, low to high: {1...4}, {01...16} or {a...d}")
            })?,
            None => vec![format!("{{{inner}}}")],
        };
        if results.len().saturating_mul(values.len()) > ELLIPSIS_EXPANSION_MAX {
            return Err(err("expands to too many drives"));
        }
        results =
            results.iter().flat_map(|r| values.iter().map(move |v| format!("{r}{literal}{v}"))).collect();
        rest = &rest[close + 1..];
    }
    for r in &mut results {
        r.push_str(rest);
    }
    Ok(results)
}

fn range_values(lo: &str, hi: &str) -> Option<Vec<String>> {
    if let (Ok(a), Ok(b)) = (lo.parse::<u64>(), hi.parse::<u64>()) {
        if lo.is_empty() || hi.is_empty() || a > b || b - a >= ELLIPSIS_EXPANSION_MAX as u64 {
            return None;
        }
        let width = if lo.starts_with('0') && lo.len() > 1 { lo.len() } else { 0 };
        return Some((a..=b).map(|n| format!("{n:0width$}")).collect());
    }
    let (mut l, mut h) = (lo.chars(), hi.chars());
    match (l.next(), l.next(), h.next(), h.next()) {
        (Some(a), None, Some(b), None) if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() && a <= b => {
            Some((a..=b).map(String::from).collect())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands() {
        assert_eq!(expand("/d{1...3}").expect("ok"), ["/d1", "/d2", "/d3"]);
        assert_eq!(expand("/d{08...10}").expect("ok"), ["/d08", "/d09", "/d10"]);
        assert_eq!(expand("{a...c}x").expect("ok"), ["ax", "bx", "cx"]);
        assert_eq!(
            expand("http://n{1...2}:9000/d{1...2}").expect("ok"),
            ["http://n1:9000/d1", "http://n1:9000/d2", "http://n2:9000/d1", "http://n2:9000/d2"]
        );
        assert_eq!(expand("/plain").expect("ok"), ["/plain"]);
        assert_eq!(expand("/d{1...16}").expect("ok").len(), 16);
        // The Helm chart's endpoint list: ranges from 0, in a host name with dots.
        let chart =
            expand("http://strata-{0...3}.strata-hl.storage.svc.cluster.local:9000/data{0...3}").expect("ok");
        assert_eq!(chart.len(), 16);
        assert_eq!(chart[0], "http://strata-0.strata-hl.storage.svc.cluster.local:9000/data0");
        assert_eq!(chart[15], "http://strata-3.strata-hl.storage.svc.cluster.local:9000/data3");
    }

    #[test]
    fn refuses_lookalikes_with_the_syntax() {
        for bad in
            ["./data/d{1..4}", "/d{1-4}", "/d{a..d}", "/d{1,2,3}", "/d{1\u{2026}4}", "/x{1...2}/d{1..2}"]
        {
            let e = check_lookalikes(bad).and_then(|()| expand(bad).map(drop)).expect_err(bad);
            assert!(e.to_string().contains("{1...4}"), "{e}");
        }
        for fine in ["/d{1...4}", "/plain", "/data/{backup}", "/d{x}", "/odd{name", "/d-1,2"] {
            assert_eq!(check_lookalikes(fine), Ok(()), "{fine}");
        }
    }

    #[test]
    fn refuses_bad_patterns() {
        for bad in ["/d{1...", "/d{3...1}", "/d{1...x}", "/d{aa...b}", "/d{...4}", "/d{0...99999999}"] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }
}
