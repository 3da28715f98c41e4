//! Checksummed frames for append-only logs (the index's commit log, the notification queues):
//! `[len u32 LE][crc32 u32 LE][record]`. A reader stops at the first frame that is not whole and
//! intact, which is where a torn append (a power cut in the middle of a write) ends a log.

use std::io::{self, Read};

/// Bytes before a frame's record.
pub const FRAME_HEADER_SIZE: u64 = 8;

fn crc(record: &[u8]) -> u32 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, record) as u32
}

/// Appends `record` as one frame to `out`.
pub fn push_frame(out: &mut Vec<u8>, record: &[u8]) {
    let start = out.len();
    out.resize(start + FRAME_HEADER_SIZE as usize, 0);
    out.extend_from_slice(record);
    seal_frame(&mut out[start..]);
}

/// Makes `frame` one frame: its first [`FRAME_HEADER_SIZE`] bytes, left for the header, are set
/// for the record after them (built in place, so the record is not copied into a frame).
pub fn seal_frame(frame: &mut [u8]) {
    let (header, record) = frame.split_at_mut(FRAME_HEADER_SIZE as usize);
    let len = u32::try_from(record.len()).unwrap_or(u32::MAX);
    header[..4].copy_from_slice(&len.to_le_bytes());
    header[4..].copy_from_slice(&crc(record).to_le_bytes());
}

/// Reads the frame at the reader's position: `Ok(None)` at a clean end, or where the bytes do
/// not make a whole, intact frame of at most `len_max` bytes (a torn append, or corruption).
pub fn read_frame(r: &mut impl Read, len_max: usize) -> io::Result<Option<Vec<u8>>> {
    let mut header = [0u8; FRAME_HEADER_SIZE as usize];
    if let Err(e) = r.read_exact(&mut header) {
        return if e.kind() == io::ErrorKind::UnexpectedEof { Ok(None) } else { Err(e) };
    }
    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let sum = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if len > len_max {
        return Ok(None);
    }
    let mut record = vec![0u8; len];
    if let Err(e) = r.read_exact(&mut record) {
        return if e.kind() == io::ErrorKind::UnexpectedEof { Ok(None) } else { Err(e) };
    }
    Ok((crc(&record) == sum).then_some(record))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_back_until_the_first_damaged_or_torn_one() {
        let mut log = Vec::new();
        push_frame(&mut log, b"one");
        push_frame(&mut log, b"");
        push_frame(&mut log, b"three");
        let mut r = log.as_slice();
        assert_eq!(read_frame(&mut r, 16).expect("read").as_deref(), Some(&b"one"[..]));
        assert_eq!(read_frame(&mut r, 16).expect("read").as_deref(), Some(&b""[..]));
        assert_eq!(read_frame(&mut r, 16).expect("read").as_deref(), Some(&b"three"[..]));
        assert_eq!(read_frame(&mut r, 16).expect("read"), None);

        // Torn: the last frame cut short.
        let torn = &log[..log.len() - 1];
        let mut r = torn;
        read_frame(&mut r, 16).expect("read");
        read_frame(&mut r, 16).expect("read");
        assert_eq!(read_frame(&mut r, 16).expect("read"), None);

        // A flipped bit in a record, and a length past the bound.
        let mut bad = log.clone();
        bad[FRAME_HEADER_SIZE as usize] ^= 1;
        assert_eq!(read_frame(&mut bad.as_slice(), 16).expect("read"), None);
        assert_eq!(read_frame(&mut log.as_slice(), 2).expect("read"), None);
    }
}
