//! A process's CPU time and memory from `/proc` (Linux), for reports and metrics.

/// Clock ticks per second of `/proc` CPU accounting (USER_HZ is 100 on Linux).
pub const TICKS_PER_SEC: f64 = 100.0;

/// User plus system CPU time of process `pid` (`"self"` for this one), in clock ticks.
pub fn cpu_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// A memory field of `/proc/PID/status` (`"VmRSS:"`, `"VmHWM:"`), in KiB.
pub fn memory_kib(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        assert!(cpu_ticks("self").is_some());
        assert!(memory_kib("self", "VmRSS:").is_some_and(|k| k > 0));
        assert_eq!(memory_kib("self", "NoSuchField:"), None);
    }
}
