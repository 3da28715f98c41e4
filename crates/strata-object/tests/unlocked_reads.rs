//! GETs of the current version without the object's lock (`open_unlocked` in `get.rs`): they
//! answer only from drives whose records are settled, so a write that was applied on them and is
//! then undone is never read.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use common::{body, get, pattern};
use strata_drive::faulty::{Fault, Op, Rule};
use strata_drive::{
    CallContext, Drive, DriveCall, DriveOps, DriveReply, DriveResult, FaultyDrive, LocalDrive, ShardReader,
    ShardWriter,
};
use strata_object::{DriveSlot, LayerOptions, ObjectError, ObjectLayer};
use uuid::Uuid;

/// A drive as another node would serve it (its calls still go to the drive here).
#[derive(Debug)]
struct OnNode(Arc<dyn Drive>);

#[async_trait]
impl Drive for OnNode {
    fn endpoint(&self) -> &str {
        self.0.endpoint()
    }

    fn node(&self) -> Option<&str> {
        Some("http://peer")
    }

    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply> {
        self.0.call(ctx, call).await
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        self.0.create_shard_file(data_id).await
    }

    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        first: Option<(u64, usize)>,
    ) -> DriveResult<Box<dyn ShardReader>> {
        self.0.open_shard_file_first(data_id, first).await
    }
}

/// Eight drives behind fault switches, EC 4+4: the first four this process's, the last four
/// another node's, so a read without the lock asks only the first four (half the set).
async fn rig() -> (tempfile::TempDir, Vec<Arc<FaultyDrive>>, ObjectLayer) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut faulty = Vec::new();
    let mut slots: Vec<DriveSlot> = Vec::new();
    for i in 0..8 {
        let d = LocalDrive::open(&dir.path().join(format!("d{i}"))).expect("open drive");
        d.write_format(b"{}".to_vec()).await.expect("format");
        let f = Arc::new(FaultyDrive::new(Arc::new(d)));
        slots.push(Some(if i < 4 { f.clone() as Arc<dyn Drive> } else { Arc::new(OnNode(f.clone())) }));
        faulty.push(f);
    }
    let options = LayerOptions { drive_op_timeout: Duration::from_secs(30), ..Default::default() };
    let layer =
        ObjectLayer::new_with(Uuid::from_u128(1), vec![vec![slots]], 4, None, options).await.expect("layer");
    layer.make_bucket("b").await.expect("bucket");
    (dir, faulty, layer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_applied_on_the_drives_read_and_then_undone_is_never_read() {
    for size in [4096, 3 << 20] {
        let (_dir, faulty, layer) = rig().await;
        let layer = Arc::new(layer);
        let old = pattern(size, 1);
        layer.put_object("b", "k", &mut body(&old), Default::default()).await.expect("put old");
        assert!(get(&layer, "k").await.as_ref() == Some(&old));
        // The new version lands on this node's four drives only (too few: the write fails and
        // is undone), and the undo waits a while on them.
        for d in &faulty[4..] {
            d.add_rule(Rule::new(Op::CommitVersion, Fault::Fail));
        }
        for d in &faulty[..4] {
            d.add_rule(Rule::new(Op::FinishOp, Fault::Delay(Duration::from_millis(1500))));
        }
        let new = pattern(size, 2);
        let writer = {
            let (layer, new) = (layer.clone(), new.clone());
            tokio::spawn(async move { layer.put_object("b", "k", &mut body(&new), Default::default()).await })
        };
        // Meanwhile the four drives a lockless read asks all hold the new version, applied.
        let applied = async {
            loop {
                let mut holding = 0;
                for d in &faulty[..4] {
                    let read = d.inner().read_record("b", "k", false).await;
                    if read.is_ok_and(|(r, _)| {
                        r.versions[0].size == size as u64 && r.versions[0].etag != etag(&old)
                    }) {
                        holding += 1;
                    }
                }
                if holding == 4 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), applied).await.expect("the new version applied");
        let read = get(&layer, "k").await;
        assert!(
            read.as_ref() == Some(&old),
            "size {size}: read during the undo: {}",
            which(&read, &old, &new)
        );
        let written = writer.await.expect("writer");
        assert!(matches!(written, Err(ObjectError::WriteQuorum { .. })), "{written:?}");
        for d in &faulty {
            d.clear();
        }
        let read = get(&layer, "k").await;
        assert!(
            read.as_ref() == Some(&old),
            "size {size}: read after the undo: {}",
            which(&read, &old, &new)
        );
        // A write that succeeds is read at once.
        layer.put_object("b", "k", &mut body(&new), Default::default()).await.expect("put new");
        let read = get(&layer, "k").await;
        assert!(read.as_ref() == Some(&new), "size {size}: read after a write: {}", which(&read, &old, &new));
    }
}

/// Which version a read returned.
fn which(read: &Option<Bytes>, old: &Bytes, new: &Bytes) -> &'static str {
    match read {
        Some(r) if r == old => "the old version",
        Some(r) if r == new => "the version undone",
        Some(_) => "other bytes",
        None => "nothing",
    }
}

fn etag(data: &Bytes) -> String {
    use md5::Digest;
    hex::encode(md5::Md5::digest(data))
}
