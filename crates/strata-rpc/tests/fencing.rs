//! Lock fencing on the drives' nodes: a holder whose lock passed to another node while it was
//! stalled between its last lease check and its commit cannot commit. Four nodes in one process
//! (two drives each, EC 4+4: write quorum 5 of 8 drives), real HTTP/2 between them.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{read_all, read_in, TestCluster, VecBody};
use std::sync::atomic::Ordering;
use strata_drive::faulty::{Fault, Op, Rule};
use strata_drive::{Drive, DriveError, DriveOps, FaultyDrive, Fence};

use strata_meta::{LifecycleConfig, LifecycleExpiration, LifecycleRule, Versioning};
use strata_object::{
    CompleteOptions, CompletePart, DeleteIf, LifecycleState, Locker, ObjectError, PutOptions, VersionRef,
    WriteCondition,
};
use strata_rpc::wire::LockCall;
use strata_rpc::{LockNode, LockTimings, NodeClient, QuorumLocker, RemoteDrive};
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_holders_late_commit_is_refused_once_its_lock_passed_on() {
    let cluster = TestCluster::start(4, 2).await;
    let timeout = Duration::from_secs(5);
    // Node 0's writer: every drive (its own and its peers') behind a fault switch.
    let (a_layer, _a_clients, faulty) = behind_faults(&cluster, timeout).await;
    assert_eq!(faulty.len(), 8);
    let (b_layer, _b_clients) = cluster.layer(1, timeout, false).await;
    let old = Bytes::from(vec![1u8; 4096]);
    a_layer
        .put_object("b", "k", &mut VecBody(Some(old.clone())), Default::default())
        .await
        .expect("first put");

    // A's next PUT passes its lease check and stalls before its commits reach any drive.
    for f in &faulty {
        f.add_rule(Rule::new(Op::CommitVersion, Fault::Hang));
    }
    let a_body = Bytes::from(vec![2u8; 4096]);
    let a = tokio::spawn(async move {
        let r = a_layer.put_object("b", "k", &mut VecBody(Some(a_body)), Default::default()).await;
        (a_layer, r)
    });
    // Wait until A's commits are stalled on every drive, past its lease check: A holds the lock
    // on a majority. Then its lease "runs out" the way a paused process's does: its grants
    // vanish from every table.
    for _ in 0..500 {
        if faulty.iter().all(|f| f.faults_injected() == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(faulty.iter().all(|f| f.faults_injected() == 1), "A's commits stall on every drive");
    let holders: Vec<(u64, Uuid)> = cluster.nodes.iter().flat_map(|n| n.locks.grants()).collect();
    assert!(holders.len() >= 3, "A holds the lock on a majority: {holders:?}");
    let (resource, a_owner) = holders[0];
    assert!(holders.iter().all(|h| *h == (resource, a_owner)), "{holders:?}");
    for n in &cluster.nodes {
        n.locks.serve(LockCall::Release { owner: a_owner });
    }

    // B, on node 1, takes the lock (a majority grants it) and writes.
    let b_body = Bytes::from(vec![3u8; 4096]);
    b_layer
        .put_object("b", "k", &mut VecBody(Some(b_body.clone())), Default::default())
        .await
        .expect("B's put");
    // B still holds the lock while A's commits go out: take it again, as B's next write would.
    let b_locker = QuorumLocker::new(
        cluster.nodes.iter().map(|n| LockNode::Local(n.locks.clone())).collect(),
        LockTimings::for_rpc_timeout(timeout),
    );
    let b_guard = b_locker.lock(resource, true).await.expect("B's lock");

    // A wakes up: every drive's node refuses its commit, and its PUT fails retryably.
    for f in &faulty {
        f.clear();
    }
    let (a_layer, outcome) = a.await.expect("A's task");
    assert!(matches!(outcome, Err(ObjectError::LockNotHeld(_))), "A's late commit: {outcome:?}");
    drop(b_guard);
    // B's write stands, read from either node.
    assert_eq!(read_all(&a_layer, "k").await.expect("read on A's node"), b_body);
    assert_eq!(read_all(&b_layer, "k").await.expect("read on B's node"), b_body);

    // The same at one drive: a fenced change of an owner whose lock passed on is refused with a
    // distinct error; a fenced change of the live holder, and an unfenced one, are taken.
    let b_guard = b_locker.lock(resource, true).await.expect("B's lock again");
    let b_fence = b_guard.fence().expect("a quorum lock has a fence");
    let client = cluster.client(2, timeout);
    let remote: Arc<dyn Drive> = Arc::new(RemoteDrive::new(client, &cluster.nodes[2].paths[0]));
    let stale = strata_drive::fenced(remote.clone(), Fence { resource, holder: a_owner });
    let refused = stale.delete_version("b", "k", None, Uuid::new_v4()).await;
    assert!(matches!(refused, Err(DriveError::Fenced(_))), "{refused:?}");
    let op = Uuid::new_v4();
    strata_drive::fenced(remote.clone(), b_fence)
        .delete_version("b", "k", None, op)
        .await
        .expect("B's fenced change");
    remote.finish_op(op, false).await;
    drop(b_guard);
}

/// A conditional write whose holder stalls past its lease, while another node's write comes and
/// goes (the lock taken, the object changed, the lock released) before the stalled commit goes
/// out. Fencing at the nodes cannot refuse it (nobody holds the lock any more), and the version
/// stamps would order it after the other write: its condition, checked against the old object,
/// must refuse it instead. The drives do that: the commit carries the newest stamp the
/// condition saw, and a drive holding a newer version refuses it. `If-Match` of the old ETag
/// loses with 409 (`ConditionConflict`), and the other write stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_conditional_write_loses_to_a_write_made_after_its_check() {
    let cluster = TestCluster::start(4, 2).await;
    let timeout = Duration::from_secs(5);
    let (a_layer, _a_clients, faulty) = behind_faults(&cluster, timeout).await;
    let a_layer = Arc::new(a_layer);
    let (b_layer, _b_clients) = cluster.layer(1, timeout, false).await;
    // Over two keys, one again (its lock table and stamps have history); a PUT, then a
    // multipart Complete, each with `If-Match`.
    for (key, complete) in [("k1", false), ("k2", false), ("k1", true), ("k2", true)] {
        let old = Bytes::from(vec![1u8; 4096]);
        let first = a_layer
            .put_object("b", key, &mut VecBody(Some(old.clone())), Default::default())
            .await
            .expect("first put");
        let condition = Some(WriteCondition::Match(first.etag.clone()));
        let a_body = Bytes::from(vec![2u8; 4096]);
        // A Complete's one part, uploaded before the stall.
        let upload = if complete {
            let id = a_layer.create_multipart_upload("b", key, PutOptions::default()).await.expect("upload");
            let part = a_layer
                .upload_part("b", key, id, 1, &mut VecBody(Some(a_body.clone())), None)
                .await
                .expect("part");
            Some((id, CompletePart { number: 1, etag: part.etag, checksums: Default::default() }))
        } else {
            None
        };

        // A's commits stall after its check.
        let before: Vec<u64> = faulty.iter().map(|f| f.faults_injected()).collect();
        let stalled = || faulty.iter().zip(&before).all(|(f, b)| f.faults_injected() > *b);
        let stalled_op = if complete { Op::CompleteUpload } else { Op::CommitVersion };
        for f in &faulty {
            f.add_rule(Rule::new(stalled_op, Fault::Hang).times(1));
        }
        let a_task_layer = a_layer.clone();
        let a_key = key.to_owned();
        let a = tokio::spawn(async move {
            match upload {
                Some((id, part)) => {
                    let opts = CompleteOptions { condition, ..Default::default() };
                    a_task_layer.complete_multipart_upload("b", &a_key, id, &[part], opts).await
                }
                None => {
                    let opts = PutOptions { condition, ..Default::default() };
                    a_task_layer.put_object("b", &a_key, &mut VecBody(Some(a_body)), opts).await
                }
            }
        });
        for _ in 0..500 {
            if stalled() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(stalled(), "{key}: A's commits stall on every drive");
        // A's lease runs out (its grants vanish), B writes and lets go of the lock.
        let holders: Vec<(u64, Uuid)> = cluster.nodes.iter().flat_map(|n| n.locks.grants()).collect();
        let (_, a_owner) = *holders.first().expect("A holds the lock");
        for n in &cluster.nodes {
            n.locks.serve(LockCall::Release { owner: a_owner });
        }
        let b_body = Bytes::from(vec![3u8; 4096]);
        b_layer
            .put_object("b", key, &mut VecBody(Some(b_body.clone())), Default::default())
            .await
            .expect("B's put");
        // B's release reaches every node (it goes out in the background).
        for _ in 0..500 {
            if cluster.nodes.iter().all(|n| n.locks.grants().is_empty()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(cluster.nodes.iter().all(|n| n.locks.grants().is_empty()), "{key}: B let go of the lock");
        // A wakes with nobody holding the lock: its drives refuse it all the same.
        for f in &faulty {
            f.clear();
        }
        let outcome = a.await.expect("A's task");
        assert!(
            matches!(outcome, Err(ObjectError::ConditionConflict)),
            "{key}: A's late commit: {outcome:?}"
        );
        assert_eq!(read_all(&a_layer, key).await.expect("read on A's node"), b_body, "{key}");
        assert_eq!(read_all(&b_layer, key).await.expect("read on B's node"), b_body, "{key}");
    }
}

/// An IAM key revocation racing a stale writer across four nodes. The IAM state is one object
/// replaced by conditional writes (`strata-system/src/iam.rs`). Node A's change (adding a user)
/// passes its check and stalls before its commit; its lease runs out; node B removes a user
/// (revoking its key) and lets go of the lock; then A's commit goes out. The drives refuse it
/// (its condition saw the state before the revocation), A makes its change again on the newest
/// state, and both nodes then load a state with A's user and without the revoked one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_iam_revocation_is_not_undone_by_a_stale_writer() {
    use strata_system::iam::Iam;
    const ROOT: (&str, &str) = ("rootuser", "root-secret-123");
    let cluster = TestCluster::start(4, 2).await;
    let timeout = Duration::from_secs(5);
    let (a_layer, _a_clients, faulty) = behind_faults(&cluster, timeout).await;
    let a_layer = Arc::new(a_layer);
    strata_system::prepare(&a_layer).await.expect("system bucket");
    let (b_layer, _b_clients) = cluster.layer(1, timeout, false).await;
    let a_iam = Arc::new(Iam::new(ROOT.0, ROOT.1));
    a_iam.change(&a_layer, |s| s.add_user("victim", "victim-secret-key")).await.expect("the user to revoke");
    let b_iam = Iam::new(ROOT.0, ROOT.1);
    b_iam.load(&b_layer).await.expect("B loads");
    assert!(b_iam.directory().state().users.contains_key("victim"));

    // A's next change stalls after its check, on every drive.
    let before: Vec<u64> = faulty.iter().map(|f| f.faults_injected()).collect();
    let stalled = || faulty.iter().zip(&before).all(|(f, b)| f.faults_injected() > *b);
    for f in &faulty {
        f.add_rule(Rule::new(Op::CommitVersion, Fault::Hang).times(1));
    }
    let (task_iam, task_layer) = (a_iam.clone(), a_layer.clone());
    let a = tokio::spawn(async move {
        task_iam
            .change(&task_layer, |s| s.add_user("late", "late-secret-key"))
            .await
            .map_err(|e| e.to_string())
    });
    for _ in 0..500 {
        if stalled() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(stalled(), "A's commits stall on every drive");
    // A's lease runs out (its grants vanish); B revokes the key and lets go of the lock.
    let holders: Vec<(u64, Uuid)> = cluster.nodes.iter().flat_map(|n| n.locks.grants()).collect();
    let (_, a_owner) = *holders.first().expect("A holds the lock");
    for n in &cluster.nodes {
        n.locks.serve(LockCall::Release { owner: a_owner });
    }
    b_iam.change(&b_layer, |s| s.remove_user("victim")).await.expect("B revokes the key");
    for _ in 0..500 {
        if cluster.nodes.iter().all(|n| n.locks.grants().is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(cluster.nodes.iter().all(|n| n.locks.grants().is_empty()), "B let go of the lock");
    for f in &faulty {
        f.clear();
    }
    let outcome = a.await.expect("A's task");
    assert!(outcome.is_ok(), "A's change is made again on the newest state: {outcome:?}");
    for (node, layer) in [("A", &*a_layer), ("B", &b_layer)] {
        let iam = Iam::new(ROOT.0, ROOT.1);
        iam.load(layer).await.expect("load");
        let directory = iam.directory();
        let users = &directory.state().users;
        assert!(!users.contains_key("victim"), "node {node}: the revoked key came back: {:?}", users.keys());
        assert!(users.contains_key("late"), "node {node}: A's change is lost: {:?}", users.keys());
    }
}

/// Waits up to 5 s for `done`; answers whether it came.
async fn wait_until(done: impl Fn() -> bool) -> bool {
    for _ in 0..500 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

/// A conditional delete (`If-Match` of the current ETag) whose holder stalls past its lease
/// after its check, while another node replaces the object and lets go of the lock. The
/// delete's commit carries the newest stamp its condition saw; the drives refuse it (409
/// `ConditionConflict`) and the other node's object stands. In an unversioned bucket the delete
/// is the removal of the `null` version; in a versioned one, a new delete marker. A lifecycle
/// pass expiring the object is held to the same: its check is the object it read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_conditional_delete_loses_to_a_write_made_after_its_check() {
    let cluster = TestCluster::start(4, 2).await;
    let timeout = Duration::from_secs(5);
    let (a_layer, _a_clients, faulty) = behind_faults(&cluster, timeout).await;
    let a_layer = Arc::new(a_layer);
    a_layer.make_bucket("v").await.expect("bucket v");
    a_layer.put_bucket_versioning("v", Versioning::Enabled).await.expect("versioning");
    a_layer.make_bucket("e").await.expect("bucket e");
    let (b_layer, _b_clients) = cluster.layer(1, timeout, false).await;
    for (bucket, stalled_op) in [("b", Op::DeleteVersion), ("v", Op::CommitVersion), ("e", Op::DeleteVersion)]
    {
        let first = a_layer
            .put_object(bucket, "k", &mut VecBody(Some(Bytes::from(vec![1u8; 4096]))), Default::default())
            .await
            .expect("first put");
        let before: Vec<u64> = faulty.iter().map(|f| f.faults_injected()).collect();
        let stalled = || faulty.iter().zip(&before).all(|(f, b)| f.faults_injected() > *b);
        for f in &faulty {
            f.add_rule(Rule::new(stalled_op, Fault::Hang).times(1));
        }
        let (a_task_layer, etag) = (a_layer.clone(), first.etag.clone());
        if bucket == "e" {
            a_layer.update_bucket("e", |r| r.lifecycle = Some(expire_everything())).await.expect("rule");
        }
        let a = tokio::spawn(async move {
            if bucket == "e" {
                let expired_before = a_task_layer.lifecycle().totals.expired_current.load(Ordering::Relaxed);
                let from_the_start =
                    LifecycleState { running: Some(Default::default()), ..Default::default() };
                a_task_layer.lifecycle_pass(from_the_start, None).await;
                let expired = a_task_layer.lifecycle().totals.expired_current.load(Ordering::Relaxed);
                // The pass answers no error: whether it expired the object is its count.
                return if expired > expired_before {
                    Ok(Default::default())
                } else {
                    Err(ObjectError::ConditionConflict)
                };
            }
            let condition = Some(DeleteIf::ETag(&etag));
            a_task_layer.delete_object_version_if(bucket, "k", VersionRef::Current, false, condition).await
        });
        assert!(wait_until(stalled).await, "{bucket}: A's delete stalls on every drive");
        let holders: Vec<(u64, Uuid)> = cluster.nodes.iter().flat_map(|n| n.locks.grants()).collect();
        let (_, a_owner) = *holders.first().expect("A holds the lock");
        for n in &cluster.nodes {
            n.locks.serve(LockCall::Release { owner: a_owner });
        }
        let b_body = Bytes::from(vec![3u8; 4096]);
        b_layer
            .put_object(bucket, "k", &mut VecBody(Some(b_body.clone())), Default::default())
            .await
            .expect("B's put");
        let released = || cluster.nodes.iter().all(|n| n.locks.grants().is_empty());
        assert!(wait_until(released).await, "{bucket}: B let go of the lock");
        for f in &faulty {
            f.clear();
        }
        let outcome = a.await.expect("A's task");
        assert!(
            matches!(outcome, Err(ObjectError::ConditionConflict)),
            "{bucket}: A's late delete: {outcome:?}"
        );
        for (node, layer) in [("A", &*a_layer), ("B", &b_layer)] {
            let read = read_in(layer, bucket, "k").await.map_err(|e| e.to_string());
            assert_eq!(read, Ok(b_body.to_vec()), "{bucket}: node {node} reads B's object");
        }
    }
}

/// A lifecycle rule that expires every object now (its date, 1970-01-02, is long past).
fn expire_everything() -> LifecycleConfig {
    let rule = LifecycleRule {
        id: "past".into(),
        enabled: true,
        expiration: Some(LifecycleExpiration::Date(86_400)),
        ..Default::default()
    };
    LifecycleConfig { rules: vec![rule] }
}

/// Node 0's object layer with every drive (its own and its peers') behind a fault switch: the
/// layer, its clients of the other nodes, and the switches.
async fn behind_faults(
    cluster: &TestCluster,
    timeout: Duration,
) -> (strata_object::ObjectLayer, Vec<Option<Arc<NodeClient>>>, Vec<Arc<FaultyDrive>>) {
    let faulty: std::sync::Mutex<Vec<Arc<FaultyDrive>>> = Default::default();
    let (layer, clients) = cluster
        .layer_with(0, timeout, true, |d| {
            let f = Arc::new(FaultyDrive::new(d));
            faulty.lock().expect("lock").push(f.clone());
            f as Arc<dyn Drive>
        })
        .await;
    (layer, clients, faulty.into_inner().expect("lock"))
}

/// A shared lock released a moment before the same node asks for the exclusive one (a heal
/// reads, then commits): the releases to peers go out in a batch a millisecond later. A peer
/// that still showed the reader when the holder's change reached it refused the change, so the
/// holder's commit missed that node's drives. An exclusive lock asks only a majority, so one
/// node is not asked at all and still shows the reader: the drive calls to a node carry this
/// node's releases on their way, applied before the calls, so every node admits the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_right_after_a_shared_lock_is_admitted_on_every_node() {
    let cluster = TestCluster::start(4, 1).await;
    let timeout = Duration::from_secs(5);
    // Node 0's locker and drives, as a node builds them: its own table, its peers over RPC,
    // one client per peer for both.
    let clients: Vec<Arc<NodeClient>> = (1..4).map(|i| cluster.client(i, timeout)).collect();
    let mut nodes = vec![LockNode::Local(cluster.nodes[0].locks.clone())];
    nodes.extend(clients.iter().map(|c| LockNode::Remote(c.clone())));
    let locker = QuorumLocker::new(nodes, LockTimings::for_rpc_timeout(timeout));
    let drives: Vec<RemoteDrive> = clients
        .iter()
        .zip(&cluster.nodes[1..])
        .map(|(c, n)| RemoteDrive::new(c.clone(), &n.paths[0]))
        .collect();
    let mut unasked = 0;
    for resource in 0..32u64 {
        // The shared lock asks this node and one peer picked by the hash, then the exclusive
        // one the same two and the next. Another owner holds that peer a moment, so the shared
        // lock spills over to the last peer, which the exclusive one then does not ask.
        let first = cluster.nodes[(resource % 3) as usize + 1].locks.clone();
        let other = Uuid::new_v4();
        assert!(first.serve(LockCall::Acquire { resource, owner: other, exclusive: true, lease_ms: 60_000 }));
        let shared = locker.lock(resource, false).await.expect("shared lock");
        assert!(first.serve(LockCall::Release { owner: other }));
        drop(shared);
        let exclusive = locker.lock(resource, true).await.expect("exclusive lock");
        let fence = exclusive.fence().expect("a quorum lock has a fence");
        unasked +=
            cluster.nodes.iter().filter(|n| !n.locks.grants().contains(&(resource, fence.holder))).count();
        let ctx = strata_drive::CallContext { op: None, fence: Some(fence) };
        for (i, d) in drives.iter().enumerate() {
            let call = strata_drive::DriveCall::DeleteVersion {
                bucket: "b".into(),
                key: format!("k{resource}"),
                version_id: None,
                checked: None,
            };
            let answer = d.call(ctx, call).await;
            assert!(
                !matches!(answer, Err(DriveError::Fenced(_))),
                "resource {resource}: node {} refused the holder's change: {answer:?}",
                i + 1
            );
        }
        drop(exclusive);
    }
    // The majority was three of four: a node left unasked (holding the reader's grant until
    // its release came).
    assert!(unasked > 0, "every node was asked for every lock");
}
