//! GetObject and HeadObject: resolve the version, then stream a range of it.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::join_all;
use strata_drive::ShardReader;
use strata_erasure::{bitrot, Erasure, ShardLayout};
use strata_meta::{DataLocation, ObjectVersion};
use tokio::sync::mpsc;

use crate::error::ObjectError;
use crate::set::ErasureSet;
use crate::ObjectInfo;

/// Where each shard of an opened version can be read.
enum ShardSource {
    /// Frames of an inline version, by shard index (one frame each).
    Inline(Vec<Option<Bytes>>),
    /// Open shard files, by shard index.
    Files(Vec<Option<Arc<dyn ShardReader>>>),
}

/// An object version resolved and opened for reading: its shard files stay readable even if a
/// newer version replaces it while the body streams.
pub struct OpenObject {
    pub info: ObjectInfo,
    version: ObjectVersion,
    erasure: Arc<Erasure>,
    source: ShardSource,
}

/// The body of a GET: chunks in order; an `Err` ends the stream (the client sees a short body).
pub type ObjectStream = mpsc::Receiver<Result<Bytes, ObjectError>>;

pub(crate) async fn open_object(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    hash: u64,
    for_read: bool,
) -> Result<OpenObject, ObjectError> {
    let _guard = set.locks.shared(hash).await;
    let reads = set.read_records(bucket, key, for_read).await;
    let resolved = set.resolve(reads)?;
    let version = resolved.version;
    let info = ObjectInfo::from_version(bucket, key, &version);
    let (data_count, parity_count) =
        (usize::from(version.erasure.data_count), usize::from(version.erasure.parity_count));
    let erasure = if data_count == set.erasure.data_count() && parity_count == set.erasure.parity_count() {
        set.erasure.clone()
    } else {
        Arc::new(Erasure::new(data_count, parity_count).map_err(|e| ObjectError::Internal(e.to_string()))?)
    };
    let shard_count = data_count + parity_count;
    let dist = &version.erasure.distribution;
    let source = match version.data {
        _ if !for_read => ShardSource::Inline(vec![None; shard_count]),
        DataLocation::Inline(_) => {
            let mut frames = vec![None; shard_count];
            for (pos, holder) in resolved.holders.into_iter().enumerate() {
                if let (Some(Some(frame)), Some(&shard)) = (holder, dist.get(pos)) {
                    if let Some(slot) = frames.get_mut(usize::from(shard)) {
                        *slot = Some(frame);
                    }
                }
            }
            ShardSource::Inline(frames)
        }
        DataLocation::File(id) => {
            let opened = join_all(set.drives.iter().zip(&resolved.holders).map(|(d, h)| async move {
                match (d, h) {
                    (Some(d), Some(_)) => d.open_shard_file(id).await.ok().map(Arc::from),
                    _ => None,
                }
            }))
            .await;
            let mut readers: Vec<Option<Arc<dyn ShardReader>>> = vec![None; shard_count];
            for (pos, reader) in opened.into_iter().enumerate() {
                if let (Some(r), Some(&shard)) = (reader, dist.get(pos)) {
                    if let Some(slot) = readers.get_mut(usize::from(shard)) {
                        *slot = Some(r);
                    }
                }
            }
            ShardSource::Files(readers)
        }
    };
    Ok(OpenObject { info, version, erasure, source })
}

impl OpenObject {
    /// Streams bytes `[offset, offset + len)` (already checked against the size). Blocks are
    /// read, verified and decoded one ahead of the client, through a bounded channel.
    pub fn stream(self, offset: u64, len: u64) -> ObjectStream {
        let (tx, rx) = mpsc::channel(2 * self.erasure.data_count().max(2));
        tokio::spawn(async move {
            if let Err(e) = self.produce(offset, len, &tx).await {
                let _ = tx.send(Err(e)).await;
            }
        });
        rx
    }

    async fn produce(
        &self,
        offset: u64,
        len: u64,
        tx: &mpsc::Sender<Result<Bytes, ObjectError>>,
    ) -> Result<(), ObjectError> {
        let layout = ShardLayout::new(
            self.version.size,
            self.version.erasure.block_size as usize,
            self.erasure.data_count(),
        );
        let end = offset + len;
        for block in layout.blocks_for_range(offset, len) {
            let shards = self.read_block(&layout, block).await?;
            let block_start = block * layout.block_size;
            let mut pos = block_start;
            for shard in shards {
                let shard_end = (pos + shard.len() as u64).min(block_start + layout.block_len(block));
                let (from, to) = (offset.max(pos), end.min(shard_end));
                if from < to {
                    let piece = shard.slice((from - pos) as usize..(to - pos) as usize);
                    if tx.send(Ok(piece)).await.is_err() {
                        return Ok(()); // the client went away
                    }
                }
                pos += shard.len() as u64;
            }
        }
        Ok(())
    }

    /// Reads and verifies the data shards of one block, reaching for parity shards only when a
    /// data shard is missing or bad.
    async fn read_block(&self, layout: &ShardLayout, block: u64) -> Result<Vec<Bytes>, ObjectError> {
        let data_count = self.erasure.data_count();
        let shard_count = self.erasure.shard_count();
        let shard_size = layout.shard_size(block) as usize;
        let mut shards: Vec<Option<Bytes>> = self.read_shards(0..data_count, layout, block, shard_size).await;
        if shards.iter().any(Option::is_none) {
            let parity = self.read_shards(data_count..shard_count, layout, block, shard_size).await;
            shards.extend(parity);
        } else {
            shards.resize(shard_count, None);
        }
        self.erasure.decode_block(shards).map_err(|e| ObjectError::ReadQuorum {
            needed: data_count,
            online: match e {
                strata_erasure::ErasureError::TooFewShards { available, .. } => available,
                _ => 0,
            },
        })
    }

    async fn read_shards(
        &self,
        indexes: std::ops::Range<usize>,
        layout: &ShardLayout,
        block: u64,
        shard_size: usize,
    ) -> Vec<Option<Bytes>> {
        match &self.source {
            ShardSource::Inline(frames) => indexes
                .map(|i| {
                    let frame = frames.get(i)?.as_ref()?;
                    bitrot::verify(frame, shard_size).ok().map(|r| frame.slice(r))
                })
                .collect(),
            ShardSource::Files(readers) => {
                let offset = layout.frame_offset(block);
                join_all(indexes.map(|i| async move {
                    let reader = readers.get(i)?.as_ref()?;
                    reader.read_frame(offset, shard_size).await.ok()
                }))
                .await
            }
        }
    }
}
