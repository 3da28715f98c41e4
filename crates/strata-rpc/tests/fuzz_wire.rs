//! Never-panic fuzzing of what a node reads from another node: MessagePack calls and replies,
//! and the authentication header of a request.

use bytes::Bytes;
use http::HeaderMap;
use strata_drive::{CallContext, DriveCall, DriveReply};
use strata_rpc::auth::{BodyDigest, RpcKey, Signed, AUTH_HEADER};
use strata_rpc::peer::{PeerCall, PeerError, PeerReply, SpeedtestShare};
use strata_rpc::wire::{decode, encode, Batch, LockCall, RemoteCall, RemoteReply, WireError};
use uuid::Uuid;

#[test]
fn fuzz_wire_messages() {
    let calls = [
        encode(&DriveCall::ReadRecord { bucket: "b".into(), key: "photos/cat.jpg".into(), inline: true }),
        encode(&DriveCall::WriteState("heal".into(), Bytes::from_static(b"{\"queue\":[]}"))),
        encode(&DriveCall::ListParts(Uuid::from_u128(5))),
        encode(&DriveCall::SweepOrphans { min_age: std::time::Duration::from_secs(3600) }),
        encode(&RemoteCall::Drive(CallContext::default(), Box::new(DriveCall::DiskInfo))),
        encode(&RemoteCall::OpenShard(Uuid::from_u128(7))),
        encode(&Ok::<_, WireError>(RemoteReply::Handle(3))),
        encode(&Batch {
            closes: vec![1, 2, 3],
            releases: vec![Uuid::from_u128(9)],
            kept: vec![("/d1".into(), Uuid::from_u128(7))],
        }),
        encode(&PeerCall::Changed(strata_object::SharedState::Iam)),
        encode(&PeerCall::Speedtest(SpeedtestShare {
            size: 1 << 20,
            concurrent: 4,
            duration_secs: 2.0,
            prefix: "run-1/node-1".into(),
            sse: None,
        })),
        encode(&PeerCall::ListenPoll(strata_notify::relay::Poll {
            subscription: "r1".into(),
            wait_ms: 100,
            close: false,
        })),
        encode(&Err::<PeerReply, _>(PeerError::Refused("busy".into()))),
        encode(&vec![("/d1".to_owned(), encode(&DriveCall::DiskInfo)), ("/d2".to_owned(), Bytes::new())]),
        encode(&Err::<(), _>(WireError::Unreachable("drive /d1 is offline".into()))),
        encode(&Ok::<_, WireError>(DriveReply::Bytes(Some(Bytes::from_static(b"format"))))),
    ];
    let corpus: Vec<&[u8]> = calls.iter().map(|b| b.as_ref()).collect();
    strata_types::fuzz::run("rpc messages", &corpus, |bytes| {
        let _ = decode::<RemoteCall>(bytes);
        let _ = decode::<Result<RemoteReply, WireError>>(bytes);
        let _ = decode::<LockCall>(bytes);
        let _ = decode::<Batch>(bytes);
        let _ = decode::<PeerCall>(bytes);
        let _ = decode::<Result<PeerReply, PeerError>>(bytes);
        let _ = decode::<Vec<(String, Bytes)>>(bytes);
        let _ = decode::<Vec<Result<RemoteReply, WireError>>>(bytes);
    });
}

#[test]
fn fuzz_signature_headers() {
    let key = RpcKey::derive("admin", "secret-password");
    let now = strata_rpc::auth::unix_now();
    let path = "/_strata/rpc/v1/drive/call?d=%2Fa";
    let corpus: Vec<Vec<u8>> = [BodyDigest::of(b"body"), BodyDigest::Frames]
        .into_iter()
        .map(|body| {
            let signed = Signed { time: now, sender: 0xabcdef, sequence: 42, body };
            key.header("POST", path, &signed).0.as_bytes().to_vec()
        })
        .collect();
    let refs: Vec<&[u8]> = corpus.iter().map(Vec::as_slice).collect();
    strata_types::fuzz::run("rpc signature header", &refs, |bytes| {
        let mut headers = HeaderMap::new();
        if let Ok(v) = http::HeaderValue::from_bytes(bytes) {
            headers.insert(AUTH_HEADER, v);
        }
        let _ = key.verify(&headers, "POST", path, now);
    });
}
