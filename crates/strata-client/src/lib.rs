//! Strata's client side: a minimal SigV4 S3 client, and the two commands built on it,
//! `strata bench` (a load generator for any S3 endpoint) and `strata admin` (the admin API's
//! command line). It signs with `strata-sign` and must never import the server's crates.
//!
//! `strata bench` prepares a bucket (and objects, for reads), then runs `--concurrent` workers for
//! `--duration`, each issuing one operation after another over pooled connections, and reports
//! per-operation throughput, ops/s, latency percentiles (and time to first byte for GET), errors
//! by S3 code, and its own CPU use. Request bodies are one shared buffer (no per-request copy);
//! response bodies are streamed and counted, and their size (and on request, MD5 against the
//! ETag) is checked, so a wrong server cannot score well.
//!
//! - [`client`]: a minimal SigV4 S3 client over hyper.
//! - [`run`]: the phases (prepare, run, clean up) and the workers.
//! - [`report`]: statistics, the text table and the JSON report; [`compare`] sets two side by side;
//!   [`chart`] draws a run; [`agent`]: `strata bench serve`, workers for multi-client runs.
//! - [`admin`] (with [`admin_iam`] and [`admin_kms`]): `strata admin`, over the admin API.

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
