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

/// The soft limit on open files of this process (`None`: unlimited or unreadable).
pub fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// When process `pid` started, in Unix seconds: its start in clock ticks after boot
/// (`/proc/PID/stat`) plus the boot time (`/proc/stat`).
pub fn start_time_unix(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let system = std::fs::read_to_string("/proc/stat").ok()?;
    let boot: u64 = system.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
    Some(boot as f64 + ticks as f64 / TICKS_PER_SEC)
}

/// A process's I/O counters (`/proc/PID/io`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Bytes read and written through system calls (page cache included).
    pub rchar: u64,
    pub wchar: u64,
    /// Read and write system calls.
    pub syscr: u64,
    pub syscw: u64,
    /// Bytes that reached the storage device.
    pub read_bytes: u64,
    pub write_bytes: u64,
}

pub fn io_counters(pid: &str) -> Option<IoCounters> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let field = |name: &str| -> Option<u64> {
        text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(": ")?.trim().parse().ok())
    };
    Some(IoCounters {
        rchar: field("rchar")?,
        wchar: field("wchar")?,
        syscr: field("syscr")?,
        syscw: field("syscw")?,
        read_bytes: field("read_bytes")?,
        write_bytes: field("write_bytes")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        assert!(cpu_ticks("self").is_some());
        assert!(memory_kib("self", "VmRSS:").is_some_and(|k| k > 0));
        assert_eq!(memory_kib("self", "NoSuchField:"), None);
        assert!(open_files_limit().is_some_and(|n| n > 0));
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64());
        let start = start_time_unix("self").expect("a start time");
        assert!(now.is_ok_and(|now| start <= now + 1.0 && start > now - 86_400.0 * 365.0), "{start}");
        let before = io_counters("self").expect("io counters");
        let _ = std::fs::read_to_string("/proc/self/stat");
        let after = io_counters("self").expect("io counters");
        assert!(after.syscr > before.syscr && after.rchar > before.rchar, "{before:?} {after:?}");
    }
}
