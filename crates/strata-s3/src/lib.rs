//! The S3 protocol: everything between an S3 request the front door (`strata-server`) admitted
//! and the object layer.
//!
//! - [`context`]: the request context every handler shares ([`Node`], [`Request`], [`Reply`]);
//!   [`dispatch`]: one request → its operation → its handler (the only module that imports the
//!   handlers).
//! - [`budget`]: admission: in-flight slots and buffer memory held until a response is sent, the
//!   memory ceiling (503 SlowDown past them).
//! - [`router`]: method + path + query (+ host for virtual-host style) → one [`Operation`];
//!   [`authz`]: each operation → the IAM actions, resource ARNs and condition keys S3 documents
//!   for it (the table `strata-iam` evaluates for every request, see [`access`]);
//!   [`headers`]: THE table deciding every `x-amz-*` request header (served, ignored as asking
//!   for no guarantee, or refused), run before any handler.
//! - [`sigv4`]: header, presigned and streaming signatures ([`sigv2`] for older clients' presigned URLs); [`chunked`] decodes aws-chunked bodies.
//! - [`body`]: request bodies verified in one pass (length, payload hash, chunk signatures,
//!   [`checksum`]s) as they stream into the object layer; response bodies.
//! - [`bucket`], [`object`] and [`multipart`]: the handlers, named after the AWS operations;
//!   [`versioning`] (`versionId`, delete markers, ListObjectVersions) and [`object_lock`]
//!   (retention, legal hold, the bucket's lock configuration).
//! - [`notification`]: the bucket notification configuration calls, and `Request::notify`, the
//!   one call a handler makes after a change succeeded (delivery is `strata-notify`'s);
//!   [`listen`]: MinIO's listen API (`mc watch`), streaming every event to whoever listens
//!   (across nodes through `strata_notify`'s relay).
//! - [`access`]: who a request is and whether the policies, or where the bucket allows them the
//!   ACLs ([`grants`]: owners, canonical ids, canned ACLs and grants), let it through.
//! - [`sts`]: STS `AssumeRole` and `AssumeRoleWithWebIdentity` (temporary credentials), at
//!   `POST /` with a form body; the sessions themselves and the identity tokens' checks are
//!   `strata_system`'s, as are the IAM state and the KMS. The admin API is `strata-admin`'s.
//! - [`sse`]: SSE-S3, SSE-KMS and SSE-C headers → the data key of a new or stored object,
//!   and the encryption headers of responses.
//! - [`error`]: THE map from every error to its S3 code and HTTP status; [`xml`] writes responses.
//!
//! Invariants: every request is authenticated before any handler runs; no header that asks for a
//! guarantee Strata does not give (encryption, object lock, ...) is accepted and dropped;
//! handlers never buffer an object body (only small XML documents, bounded); every error leaves
//! as S3 XML.

pub mod access;
pub mod acl;
pub mod authz;
pub mod body;
pub mod bucket;
pub mod bucket_policy;
pub mod budget;
pub mod chunked;
pub mod context;
pub mod copy;
pub mod cors;
pub mod delete;
pub mod dispatch;
pub mod documents;
pub mod encryption;
pub mod error;
pub mod grants;
pub mod headers;
pub mod lifecycle;
pub mod listen;
pub mod logs;
pub mod multipart;
pub mod notification;
pub mod object;
pub mod object_lock;
pub mod post;
pub mod replicate;
pub mod replication;
pub mod router;
mod rules;
pub mod sigv2;
pub mod sigv4;
pub mod sse;
pub mod sts;
pub mod tagging;
pub mod trace;
pub mod version;
pub mod versioning;
pub mod xml;

#[cfg(test)]
mod fuzz_tests;

pub use context::{Node, Reply, Request, S3Config};
pub use router::Operation;
