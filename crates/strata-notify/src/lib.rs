//! Bucket event notifications: what happened to an object, sent to targets the operator
//! configured, through a persistent queue.
//!
//! - [`event`]: AWS's event names and patterns, prefix/suffix filters, the overlap check
//!   configurations must pass, and the event record JSON (`Records[]`).
//! - [`target`]: targets from the environment (`MINIO_NOTIFY_WEBHOOK_*`, `MINIO_NOTIFY_NATS_*`,
//!   or `STRATA_NOTIFY_*`), their ARNs (`arn:minio:sqs::<ID>:webhook`), and sending one record
//!   (HTTP POST, or a NATS publish through [`nats`]).
//! - [`queue`]: one append-only log per target on a local drive; appends made durable in groups
//!   (one `fdatasync` per batch of concurrent events), delivered in order, at least once, with
//!   exponential backoff.
//! - [`listen`]: the in-memory fan-out to listeners (MinIO's listen API, `mc watch`): every
//!   event, whatever the configurations, lossy and never waited for; [`listening`]: a node's
//!   listeners and, over several nodes, the [`relay`] that brings the other nodes' events by
//!   long poll.
//!
//! Data enters through [`Notifier::emit`] and [`listen::Hub::publish`], called by the S3
//! handlers after an operation succeeded, and leaves through the delivery tasks and the
//! listeners' streams. Invariants: an event `emit` returned for is on the drive (or counted as
//! dropped); records of one target leave in the order they were appended; a record is removed
//! from the log only after its target accepted it; publishing to listeners never waits.

pub mod event;
pub mod listen;
pub mod listening;
pub mod nats;
pub mod queue;
pub mod relay;
pub mod target;

use std::path::Path;
use std::sync::Arc;

use strata_meta::NotificationRule;
use strata_metrics::Metrics;
use strata_types::limits::NOTIFY_QUEUE_EVENTS_MAX;

pub use event::{Event, EventName, RecordContext, Sequencer};
pub use target::{ConfigError, TargetConfig, TargetSpec};

/// The node's notification targets and their queues.
pub struct Notifier {
    ctx: RecordContext,
    queues: Vec<(TargetConfig, Arc<queue::Queue>)>,
}

impl Notifier {
    /// Opens a queue per target under `dir` (`<dir>/<kind>-<id>/`) and starts delivering what
    /// earlier runs left undelivered. Must run inside the tokio runtime.
    pub fn open(
        fs: Arc<dyn strata_drive::fs::Fs>,
        dir: &Path,
        targets: Vec<TargetConfig>,
        tls: rustls::ClientConfig,
        ctx: RecordContext,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<Self> {
        let mut queues = Vec::new();
        for config in targets {
            let folder = dir.join(config.folder_name());
            let labels = strata_metrics::TargetLabels { target: config.arn() };
            let meters = queue::Meters {
                depth: metrics.notify_queue_depth.get_or_create(&labels).clone(),
                delivered: metrics.notify_deliveries.get_or_create(&labels).clone(),
                failed: metrics.notify_failures.get_or_create(&labels).clone(),
                dropped: metrics.notify_dropped.get_or_create(&labels).clone(),
            };
            let target = target::Target::new(config.clone(), tls.clone());
            let q = queue::Queue::open(
                fs.clone(),
                &folder,
                target,
                config.arn(),
                meters,
                NOTIFY_QUEUE_EVENTS_MAX,
            )?;
            queues.push((config, q));
        }
        Ok(Self { ctx, queues })
    }

    /// The ARNs of the configured targets.
    pub fn arns(&self) -> Vec<String> {
        self.queues.iter().map(|(c, _)| c.arn()).collect()
    }

    /// The queue of the target `arn` names, if this server has it.
    pub fn queue(&self, arn: &str) -> Option<&Arc<queue::Queue>> {
        let (id, kind) = target::parse_arn(arn, &self.ctx.region)?;
        self.queues.iter().find(|(c, _)| c.id == id && c.kind() == kind).map(|(_, q)| q)
    }

    /// Queues `event` for every rule of the bucket that wants it; returns once each record is
    /// durable in its queue (or dropped and counted).
    pub async fn emit(&self, rules: &[NotificationRule], event: &Event) {
        for rule in rules.iter().filter(|r| event::rule_matches(r, event.name, &event.key)) {
            match self.queue(&rule.target_arn) {
                Some(q) => {
                    q.enqueue(event::record_json(&self.ctx, &rule.id, event)).await;
                }
                None => tracing::warn!(arn = %rule.target_arn, "notification target no longer configured"),
            }
        }
    }
}
