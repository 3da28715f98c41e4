//! Sizes as people write them: `4KiB`, `1MiB`, `1.5MB`, `100`.

/// Parses a size; binary units (`KiB`, `K`, `MiB`, `M`, `GiB`, `G`) and decimal ones (`KB`,
/// `MB`, `GB`); `None` for anything else.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.trim().parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => 1 << 10,
        "mib" | "m" => 1 << 20,
        "gib" | "g" => 1 << 30,
        "kb" => 1000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return None,
    };
    let bytes = n * mult as f64;
    (n.is_finite() && n >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// A size for people to read: `0 B`, `1000 B`, `1.5 KiB`, `3.0 MiB`, `2.00 GiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, unit) in UNITS {
        if bytes >= unit {
            let n = bytes as f64 / unit as f64;
            let digits = if n < 10.0 {
                2
            } else if n < 100.0 {
                1
            } else {
                0
            };
            return format!("{n:.digits$} {name}");
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_for_people() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1023), "1023 B");
        assert_eq!(format_size(1536), "1.50 KiB");
        assert_eq!(format_size(11_263_537), "10.7 MiB");
        assert_eq!(format_size(5 << 30), "5.00 GiB");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4KiB"), Some(4096));
        assert_eq!(parse_size("1MiB"), Some(1 << 20));
        assert_eq!(parse_size("64MiB"), Some(64 << 20));
        assert_eq!(parse_size("1.5MB"), Some(1_500_000));
        assert_eq!(parse_size("100"), Some(100));
        for bad in ["1XB", "x", "-1MiB", ""] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }
}
