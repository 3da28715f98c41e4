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
    /// [`RemoteCall::OpenShard`] and the first read of the file (offset, length) in the same
    /// round trip: a data shard that a GET will read at once.
    OpenShardReading(Uuid, u64, u32),
}

/// What a [`RemoteCall`] answers.
#[derive(Debug, Serialize, Deserialize)]
pub enum RemoteReply {
    Drive(DriveReply),
    /// The handle of an opened shard file.
    Handle(u64),
    /// The handle of an opened shard file and the bytes of its first read (none when that read
    /// failed: the reader makes it again, and meets the error there).
    Reading(u64, Option<Bytes>),
    /// [`RemoteReply::Reading`] as it travels: the read's length, its bytes in the answer's
    /// tail ([`with_tail`]).
    ReadingInTail(u64, u32),
}

/// The response header of an answer whose read bytes follow its MessagePack: the MessagePack's
/// length. The bytes then travel as they were read, and the receiver slices them out of the
/// answer instead of copying them out of the MessagePack.
pub const TAIL_HEADER: &str = "strata-tail-at";

/// The replies of a batch's answers (for [`into_tail`] and [`from_tail`]).
pub fn batch_replies(answers: &mut [Result<RemoteReply, WireError>]) -> Vec<&mut RemoteReply> {
    answers.iter_mut().filter_map(|a| a.as_mut().ok()).collect()
}

/// The reply of a single call's answer.
pub fn one_reply(reply: &mut RemoteReply) -> Vec<&mut RemoteReply> {
    vec![reply]
}

/// Moves the bytes of each [`RemoteReply::Reading`] out of `replies` (in order) into a tail.
pub fn into_tail<'a>(replies: impl Iterator<Item = &'a mut RemoteReply>) -> Vec<Bytes> {
    let mut tail = Vec::new();
    for r in replies {
        if let RemoteReply::Reading(h, Some(bytes)) = r {
            match u32::try_from(bytes.len()) {
                Ok(len) => {
                    tail.push(std::mem::take(bytes));
                    *r = RemoteReply::ReadingInTail(*h, len);
                }
                // Larger than any read a peer serves; sent as a failed read, made again.
                Err(_) => *r = RemoteReply::Reading(*h, None),
            }
        }
    }
    tail
}

/// `head` followed by `tail`'s bytes, and the length of `head`. The one copy of the read bytes
/// on their way: an answer of one buffer arrives as one HTTP/2 frame, which the receiver slices
/// without copying (an answer of several buffers would be gathered there instead).
pub fn with_tail(head: Bytes, tail: &[Bytes]) -> (Bytes, usize) {
    let mut out = Vec::with_capacity(head.len() + tail.iter().map(Bytes::len).sum::<usize>());
    out.extend_from_slice(&head);
    for t in tail {
        out.extend_from_slice(t);
    }
    (Bytes::from(out), head.len())
}

/// Puts the bytes of `tail` (an answer's bytes after its MessagePack) back into each
/// [`RemoteReply::ReadingInTail`] of `replies`, in order, as slices of it (no copy). An error
/// when the tail is shorter than the replies say.
pub fn from_tail<'a>(replies: impl Iterator<Item = &'a mut RemoteReply>, tail: &Bytes) -> Result<(), String> {
    let mut at = 0usize;
    for r in replies {
        if let RemoteReply::ReadingInTail(h, len) = *r {
            let end = at.checked_add(len as usize).filter(|&e| e <= tail.len());
            let Some(end) = end else {
                return Err(format!("an answer's tail of {} bytes is shorter than its reads", tail.len()));
            };
            *r = RemoteReply::Reading(h, Some(tail.slice(at..end)));
            at = end;
        }
    }
    Ok(())
}

/// A [`DriveError`] on the wire: the same cases, an I/O error's kind and message kept.
#[derive(Debug, Serialize, Deserialize)]
pub enum WireError {
    Unreachable(String),
    TimedOut {
        op: String,
        after_ms: u64,
    },
    Protocol(String),
    Stopped(String),
    Stale(String),
    Refused(String),
    NotFound,
    BucketNotFound,
    BucketExists,
    BucketNotEmpty,
    Corrupt(String),
    /// `std::io::ErrorKind`'s name (as `Debug` prints it) and the message.
    Io {
        kind: String,
        message: String,
    },
    Index(String),
    /// The remote process ran out of a resource (open files, memory).
    Exhausted(String),
    /// The request itself was wrong (unknown drive, undecodable call): a protocol error here.
    BadRequest(String),
    /// A fenced change refused: the object's lock has another holder on this node.
    Fenced(String),
    /// A new version refused: the drive holds one stamped `newest`, not older.
    NotNewest {
        newest: u64,
    },
    /// A conditional write's version refused: the drive holds one stamped `newest`, after the
    /// state the condition was checked against.
    ConditionChanged {
        newest: u64,
    },
}

/// The I/O error kinds an answer can carry back (others arrive as `Other`).
fn io_kind(name: &str) -> std::io::ErrorKind {
    use std::io::ErrorKind as K;
    [
        K::NotFound,
        K::PermissionDenied,
        K::AlreadyExists,
        K::InvalidData,
        K::UnexpectedEof,
        K::StorageFull,
        K::Interrupted,
    ]
    .into_iter()
    .find(|k| format!("{k:?}") == name)
    .unwrap_or(K::Other)
}

impl From<DriveError> for WireError {
    fn from(e: DriveError) -> Self {
        match e {
            DriveError::Unreachable(m) => WireError::Unreachable(m),
            DriveError::TimedOut { op, after } => {
                WireError::TimedOut { op, after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX) }
            }
            DriveError::Protocol(m) => WireError::Protocol(m),
            DriveError::Stopped(m) => WireError::Stopped(m),
            DriveError::Stale(m) => WireError::Stale(m),
            DriveError::Refused(m) => WireError::Refused(m),
            DriveError::NotFound => WireError::NotFound,
            DriveError::BucketNotFound => WireError::BucketNotFound,
            DriveError::BucketExists => WireError::BucketExists,
            DriveError::BucketNotEmpty => WireError::BucketNotEmpty,
            DriveError::Corrupt(m) => WireError::Corrupt(m),
            DriveError::Io(e) => WireError::Io { kind: format!("{:?}", e.kind()), message: e.to_string() },
            DriveError::Index(m) => WireError::Index(m),
            DriveError::Exhausted(m) => WireError::Exhausted(m),
            DriveError::Fenced(m) => WireError::Fenced(m),
            DriveError::NotNewest { newest } => WireError::NotNewest { newest },
            DriveError::ConditionChanged { newest } => WireError::ConditionChanged { newest },
        }
    }
}

impl From<WireError> for DriveError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Unreachable(m) => DriveError::Unreachable(m),
            WireError::TimedOut { op, after_ms } => {
                DriveError::TimedOut { op, after: std::time::Duration::from_millis(after_ms) }
            }
            WireError::Protocol(m) => DriveError::Protocol(m),
            WireError::Stopped(m) => DriveError::Stopped(m),
            WireError::Stale(m) => DriveError::Stale(m),
            WireError::Refused(m) => DriveError::Refused(m),
            WireError::NotFound => DriveError::NotFound,
            WireError::BucketNotFound => DriveError::BucketNotFound,
            WireError::BucketExists => DriveError::BucketExists,
            WireError::BucketNotEmpty => DriveError::BucketNotEmpty,
            WireError::Corrupt(m) => DriveError::Corrupt(m),
            WireError::Io { kind, message } => DriveError::Io(std::io::Error::new(io_kind(&kind), message)),
            WireError::Index(m) => DriveError::Index(m),
            WireError::Exhausted(m) => DriveError::Exhausted(m),
            WireError::Fenced(m) => DriveError::Fenced(m),
            WireError::NotNewest { newest } => DriveError::NotNewest { newest },
            WireError::ConditionChanged { newest } => DriveError::ConditionChanged { newest },
            WireError::BadRequest(m) => DriveError::Protocol(format!("refused by the remote node: {m}")),
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
    /// `releases` first, then `then`: the releases this node sent the receiver in batches not
    /// known to have arrived, carried by its next acquire so that the acquire never overtakes
    /// them (a heal's shared read lock, released a moment before its exclusive one is asked
    /// for, would otherwise refuse that lock and then the heal's commit on this node).
    ReleaseThen {
        releases: Vec<Uuid>,
        then: Box<LockCall>,
    },
}

/// Releases that need no answer, gathered per node and sent together: the shard files a
/// node's readers are done with, the locks this node's requests are done with, and the
/// operations its writes kept (drive path and operation: `FinishOp` kept, which the writer
/// never waits for; an undo is still sent at once and waited for).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Batch {
    pub closes: Vec<u64>,
    pub releases: Vec<Uuid>,
    #[serde(default)]
    pub kept: Vec<(String, Uuid)>,
}

/// A [`Batch`] as a sender writes it, borrowed (the same encoding).
#[derive(Debug, Serialize)]
pub struct BatchRef<'a> {
    pub closes: &'a [u64],
    pub releases: &'a [Uuid],
    pub kept: &'a [(String, Uuid)],
}

pub fn encode<T: Serialize>(value: &T) -> Bytes {
    // Encoding our own types into a Vec cannot fail (no maps with non-string keys, no I/O).
    Bytes::from(rmp_serde::to_vec(value).unwrap_or_default())
}

pub fn decode<T: for<'a> Deserialize<'a>>(bytes: &[u8]) -> Result<T, rmp_serde::decode::Error> {
    rmp_serde::from_slice(bytes)
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
    fn errors_keep_their_kind_across_nodes() {
        let cases = [
            DriveError::TimedOut { op: "read_record".into(), after: std::time::Duration::from_millis(300) },
            DriveError::Unreachable("node x is offline".into()),
            DriveError::Stale("does not hold the current version".into()),
            DriveError::Io(std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full")),
            DriveError::NotNewest { newest: 1_700_000_000_123_456_789 },
        ];
        for e in cases {
            let shown = e.to_string();
            let back: DriveError = decode::<WireError>(&encode(&WireError::from(e))).expect("decodes").into();
            assert_eq!(back.to_string(), shown);
            match back {
                DriveError::TimedOut { after, .. } => {
                    assert_eq!(after, std::time::Duration::from_millis(300))
                }
                DriveError::Io(io) => assert_eq!(io.kind(), std::io::ErrorKind::StorageFull),
                DriveError::NotNewest { newest } => assert_eq!(newest, 1_700_000_000_123_456_789),
                DriveError::Unreachable(_) | DriveError::Stale(_) => {}
                other => panic!("kind lost: {other:?}"),
            }
        }
        let refused: DriveError = WireError::BadRequest("undecodable call".into()).into();
        assert!(matches!(refused, DriveError::Protocol(_)) && refused.is_unavailable());
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
    fn read_bytes_travel_after_the_answer_and_come_back_in_place() {
        let (a, b) = (Bytes::from_static(b"first shard"), Bytes::from_static(b"second"));
        let mut answers: Vec<Result<RemoteReply, WireError>> = vec![
            Ok(RemoteReply::Reading(1, Some(a.clone()))),
            Err(WireError::NotFound),
            Ok(RemoteReply::Handle(2)),
            Ok(RemoteReply::Reading(3, None)),
            Ok(RemoteReply::Reading(4, Some(b.clone()))),
        ];
        let tail = into_tail(batch_replies(&mut answers).into_iter());
        assert_eq!(tail, [a.clone(), b.clone()]);
        let (body, at) = with_tail(encode(&answers), &tail);
        assert_eq!(body.len(), at + a.len() + b.len());
        let mut back: Vec<Result<RemoteReply, WireError>> = decode(&body[..at]).expect("decodes");
        let tail = body.slice(at..);
        from_tail(batch_replies(&mut back).into_iter(), &tail).expect("whole tail");
        assert!(matches!(&back[0], Ok(RemoteReply::Reading(1, Some(x))) if *x == a));
        assert!(matches!(&back[3], Ok(RemoteReply::Reading(3, None))));
        assert!(matches!(&back[4], Ok(RemoteReply::Reading(4, Some(x))) if *x == b));
        // The bytes are the answer's own, not copies.
        let Ok(RemoteReply::Reading(_, Some(x))) = &back[4] else { unreachable!() };
        assert_eq!(x.as_ptr(), tail[a.len()..].as_ptr());
        // A tail shorter than the replies say is an error, not a panic.
        let mut short: Vec<Result<RemoteReply, WireError>> = decode(&body[..at]).expect("decodes");
        let cut = body.slice(at..body.len() - 1);
        assert!(from_tail(batch_replies(&mut short).into_iter(), &cut).is_err());
    }

    #[test]
    fn unit_calls_and_answers_have_the_shape_the_e2e_signer_sends() {
        // tests/e2e/test_cluster.py builds these bytes by hand.
        let disk_info = RemoteCall::Drive(CallContext::default(), Box::new(DriveCall::DiskInfo));
        assert_eq!(&encode(&disk_info)[..], b"\x81\xa5Drive\x92\x92\xc0\xc0\xa8DiskInfo");
        assert!(encode(&Ok::<_, WireError>(DriveReply::Done)).starts_with(b"\x81\xa2Ok"));
    }
}
