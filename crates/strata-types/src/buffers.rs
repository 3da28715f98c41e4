//! Large buffers that are written whole and then sent (shard frames read from local files, the
//! plaintext of decrypted packages), kept for reuse.
//!
//! A frame of a 1 MiB block is up to 1 MiB; a fresh buffer of that size comes from the heap and
//! must be zeroed before `pread` (or a decryption) fills it: 3 % of the CPU of a GET 1 MiB went to
//! that `memset`, plus the page faults of fresh memory. A buffer handed out here returns when the
//! last [`Bytes`] slice of it is dropped (the response was sent), and its next use zeroes nothing
//! it already held. At most [`BUFFERS_KEPT_MAX`] buffers wait.

use std::sync::Mutex;

use crate::limits::{BUFFERS_KEPT_MAX, BUFFER_REUSE_SIZE_MIN};
use bytes::Bytes;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// A buffer of `len` bytes whose contents are unspecified (zeroes or an earlier frame's bytes):
/// the caller overwrites all of it.
pub fn take(len: usize) -> Vec<u8> {
    if len < BUFFER_REUSE_SIZE_MIN {
        return vec![0; len];
    }
    let reused = POOL.lock().ok().and_then(|mut pool| pool.pop());
    match reused {
        Some(mut buf) => {
            // Shrinking keeps the allocation; growing zeroes only the new tail.
            buf.resize(len, 0);
            buf
        }
        None => vec![0; len],
    }
}

/// `buf` as [`Bytes`]; it returns to the pool when the last slice of it is dropped.
pub fn into_bytes(buf: Vec<u8>) -> Bytes {
    if buf.len() < BUFFER_REUSE_SIZE_MIN {
        return Bytes::from(buf);
    }
    Bytes::from_owner(Pooled(buf))
}

struct Pooled(Vec<u8>);

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Ok(mut pool) = POOL.lock() {
            if pool.len() < BUFFERS_KEPT_MAX {
                pool.push(std::mem::take(&mut self.0));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_comes_back_once_its_last_slice_is_dropped() {
        let mut buf = take(BUFFER_REUSE_SIZE_MIN * 2);
        buf.fill(7);
        let at = buf.as_ptr() as usize;
        let whole = into_bytes(buf);
        let part = whole.slice(10..20);
        drop(whole);
        assert_eq!(&part[..], &[7u8; 10]);
        // Other tests may take buffers meanwhile: look for ours among what waits.
        let waiting =
            |at: usize| POOL.lock().map(|p| p.iter().any(|b| b.as_ptr() as usize == at)).unwrap_or(false);
        assert!(!waiting(at), "a slice still holds it");
        drop(part);
        assert!(waiting(at), "back in the pool");
        // Reused at another size: the length asked for, the allocation kept.
        let mut again = Vec::new();
        for _ in 0..=BUFFERS_KEPT_MAX {
            let b = take(BUFFER_REUSE_SIZE_MIN + 5);
            if b.as_ptr() as usize == at {
                again = b;
                break;
            }
        }
        assert_eq!((again.len(), again.as_ptr() as usize), (BUFFER_REUSE_SIZE_MIN + 5, at));
        assert_eq!(take(100).len(), 100);
    }
}
