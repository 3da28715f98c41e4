//! What travels between nodes: drive calls (the drive API's own [`DriveCall`]s) and replies,
//! lock calls, errors. MessagePack
//! (rmp-serde); byte payloads as `Bytes` so they travel as binary, not as arrays of numbers.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use strata_drive::{CallContext, DriveCall, DriveError, DriveReply};
use uuid::Uuid;

/// A drive call to another node: one of the drive API's calls in its context, or the opening
/// of a shard file, kept open under a handle (so a version replaced while it is read stays
/// readable, as with a local drive) until a [`Batch`] closes it or it sits idle for a minute.
#[derive(Debug, Serialize, Deserialize)]
pub enum RemoteCall {
    Drive(CallContext, Box<DriveCall>),
    OpenShard(Uuid),
}

/// What a [`RemoteCall`] answers.
#[derive(Debug, Serialize, Deserialize)]
pub enum RemoteReply {
    Drive(DriveReply),
    /// The handle of an opened shard file.
    Handle(u64),
}

/// A [`DriveError`] on the wire.
#[derive(Debug, Serialize, Deserialize)]
pub enum WireError {
    Offline(String),
    NotFound,
    BucketNotFound,
    BucketExists,
    BucketNotEmpty,
    Corrupt(String),
    Io(String),
    Index(String),
    /// The remote process ran out of a resource (open files, memory).
    Exhausted(String),
    /// The request itself was wrong (unknown drive, undecodable call).
    BadRequest(String),
    /// A fenced change refused: the object's lock has another holder on this node.
    Fenced(String),
}

impl From<DriveError> for WireError {
    fn from(e: DriveError) -> Self {
        match e {
            DriveError::Offline(m) => WireError::Offline(m),
            DriveError::NotFound => WireError::NotFound,
            DriveError::BucketNotFound => WireError::BucketNotFound,
            DriveError::BucketExists => WireError::BucketExists,
            DriveError::BucketNotEmpty => WireError::BucketNotEmpty,
            DriveError::Corrupt(m) => WireError::Corrupt(m),
            DriveError::Io(e) => WireError::Io(e.to_string()),
            DriveError::Index(m) => WireError::Index(m),
            DriveError::Exhausted(m) => WireError::Exhausted(m),
            DriveError::Fenced(m) => WireError::Fenced(m),
        }
    }
}

impl From<WireError> for DriveError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Offline(m) => DriveError::Offline(m),
            WireError::NotFound => DriveError::NotFound,
            WireError::BucketNotFound => DriveError::BucketNotFound,
            WireError::BucketExists => DriveError::BucketExists,
            WireError::BucketNotEmpty => DriveError::BucketNotEmpty,
            WireError::Corrupt(m) => DriveError::Corrupt(m),
            WireError::Io(m) => DriveError::Io(std::io::Error::other(m)),
            WireError::Index(m) => DriveError::Index(m),
            WireError::Exhausted(m) => DriveError::Exhausted(m),
            WireError::Fenced(m) => DriveError::Fenced(m),
            WireError::BadRequest(m) => DriveError::Offline(format!("refused by the remote node: {m}")),
        }
    }
}

/// A lock request to one node.
#[derive(Debug, Serialize, Deserialize)]
pub enum LockCall {
    /// Grant `resource` to `owner` (exclusively or shared) for `lease_ms`.
    Acquire {
        resource: u64,
        owner: Uuid,
        exclusive: bool,
        lease_ms: u64,
    },
    /// Extend the lease of every lock `owner` holds; false when it holds none (expired).
    Refresh {
        owner: Uuid,
        lease_ms: u64,
    },
    Release {
        owner: Uuid,
    },
}

/// Releases that need no answer, gathered per node and sent together: the shard files a
/// node's readers are done with, and the locks this node's requests are done with.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Batch {
    pub closes: Vec<u64>,
    pub releases: Vec<Uuid>,
}

pub fn encode<T: Serialize>(value: &T) -> Bytes {
    // Encoding our own types into a Vec cannot fail (no maps with non-string keys, no I/O).
    Bytes::from(rmp_serde::to_vec(value).unwrap_or_default())
}

pub fn decode<T: for<'a> Deserialize<'a>>(bytes: &[u8]) -> Result<T, String> {
    rmp_serde::from_slice(bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_errors_round_trip() {
        let payload = Bytes::from(vec![0xffu8; 300]);
        let call = RemoteCall::Drive(
            CallContext::default(),
            Box::new(DriveCall::WriteState("heal".into(), payload.clone())),
        );
        let bytes = encode(&call);
        // Binary payloads travel as bin (1 byte each), not one number per byte (2 bytes each).
        assert!(bytes.len() < 340, "{}", bytes.len());
        let Ok(RemoteCall::Drive(_, call)) = decode::<RemoteCall>(&bytes) else { panic!("decodes") };
        match *call {
            DriveCall::WriteState(n, b) => assert_eq!((n.as_str(), b), ("heal", payload)),
            other => panic!("{other:?}"),
        }
        for e in [DriveError::NotFound, DriveError::BucketNotEmpty, DriveError::Corrupt("x".into())] {
            let wire: WireError = e.into();
            let back: DriveError = decode::<WireError>(&encode(&wire)).map(Into::into).expect("decodes");
            assert!(matches!(
                back,
                DriveError::NotFound | DriveError::BucketNotEmpty | DriveError::Corrupt(_)
            ));
        }
        assert!(decode::<RemoteCall>(b"\xc1garbage").is_err());
    }

    #[test]
    fn hostile_lengths_fail_without_allocating_them() {
        // A bin of 4 GiB declared in 5 bytes: checked against the bytes present, not allocated.
        let bin = [0xc6, 0xff, 0xff, 0xff, 0xff];
        let mut call = vec![0x81, 0xaa];
        call.extend_from_slice(b"WriteState");
        call.extend_from_slice(&[0x92, 0xa1, b'x']);
        call.extend_from_slice(&bin);
        assert!(decode::<DriveCall>(&call).is_err());
        // An array of 4 billion entries declared in 5 bytes: preallocation is capped (1 MiB), and
        // decoding stops at the first missing element.
        let started = std::time::Instant::now();
        for _ in 0..1000 {
            let list = [0x81, 0xa5, b'P', b'a', b'r', b't', b's', 0xdd, 0xff, 0xff, 0xff, 0xff];
            assert!(decode::<DriveReply>(&list).is_err());
            let batch = [0x92, 0xdd, 0xff, 0xff, 0xff, 0xff];
            assert!(decode::<Batch>(&batch).is_err());
        }
        // 4 billion entries allocated would take seconds each; the caps take microseconds.
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    }

    #[test]
    fn unit_calls_and_answers_have_the_shape_the_e2e_signer_sends() {
        // tests/e2e/test_cluster.py builds these bytes by hand.
        let disk_info = RemoteCall::Drive(CallContext::default(), Box::new(DriveCall::DiskInfo));
        assert_eq!(&encode(&disk_info)[..], b"\x81\xa5Drive\x92\x92\xc0\xc0\xa8DiskInfo");
        assert!(encode(&Ok::<_, WireError>(DriveReply::Done)).starts_with(b"\x81\xa2Ok"));
    }
}
