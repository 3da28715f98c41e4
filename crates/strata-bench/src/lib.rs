//! `strata bench`: a load generator for any S3 endpoint.
//!
//! It prepares a bucket (and objects, for reads), then runs `--concurrent` workers for
//! `--duration`, each issuing one operation after another over pooled connections, and reports
//! per-operation throughput, ops/s, latency percentiles (and time to first byte for GET), errors
//! by S3 code, and its own CPU use. Request bodies are one shared buffer (no per-request copy);
//! response bodies are streamed and counted, and their size (and on request, MD5 against the
//! ETag) is checked, so a wrong server cannot score well.
//!
//! - [`client`]: a minimal SigV4 S3 client over hyper.
//! - [`run`]: the phases (prepare, run, clean up) and the workers.
//! - [`report`]: statistics, the text table and the JSON report; [`compare`] sets two side by side.

pub mod admin;
pub mod admin_iam;
pub mod admin_kms;
pub mod agent;
pub mod chart;
pub mod client;
pub mod compare;
pub mod report;
pub mod run;

pub use run::{main, run, BenchArgs, BenchCommand, Op};
