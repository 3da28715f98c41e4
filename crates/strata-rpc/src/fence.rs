//! [`FencedLocal`]: this node's own drives, as the object layer of this node sees them, with the
//! lock fence checked against this node's lock table, as [`RpcServer`](crate::RpcServer) checks
//! it for changes that come from peers: a holder whose lock passed on cannot change the drives of
//! a node that granted it to the new holder, whether the holder runs on that node or another.

use std::sync::Arc;

use async_trait::async_trait;
use strata_drive::{
    CallContext, Drive, DriveCall, DriveError, DriveReply, DriveResult, Fence, ShardReader, ShardWriter,
};
use uuid::Uuid;

use crate::lock::{Admitted, LockServer};

/// A drive of this node whose fenced changes ([`strata_drive::fenced`]) are admitted by this
/// node's [`LockServer`] first ([`LockServer::admit`]).
pub struct FencedLocal {
    inner: Arc<dyn Drive>,
    locks: Arc<LockServer>,
}

impl std::fmt::Debug for FencedLocal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FencedLocal({})", self.inner.endpoint())
    }
}

impl FencedLocal {
    pub fn new(inner: Arc<dyn Drive>, locks: Arc<LockServer>) -> Self {
        Self { inner, locks }
    }

    /// Admission of a change under `fence` (none without one).
    fn admit(&self, fence: Option<Fence>) -> DriveResult<Option<Admitted>> {
        let Some(fence) = fence else { return Ok(None) };
        match self.locks.admit(fence) {
            Some(a) => Ok(Some(a)),
            None => Err(DriveError::Fenced(format!(
                "{} has another holder of lock {:016x}",
                self.inner.endpoint(),
                fence.resource
            ))),
        }
    }
}

#[async_trait]
impl Drive for FencedLocal {
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }

    fn node(&self) -> Option<&str> {
        self.inner.node()
    }

    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply> {
        // A change under an object lock: admitted only while no other holder has the lock in
        // this node's table, and no other holder is granted it here until the change is done.
        let _admitted = if call.is_fenced() { self.admit(ctx.fence)? } else { None };
        self.inner.call(ctx, call).await
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        self.inner.create_shard_file(data_id).await
    }

    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        first: Option<(u64, usize)>,
    ) -> DriveResult<Box<dyn ShardReader>> {
        self.inner.open_shard_file_first(data_id, first).await
    }

    fn commit_totals(&self) -> Option<strata_drive::CommitTotals> {
        self.inner.commit_totals()
    }
}
